// Flag parsing and configuration: vLLM's names and spellings, compat flags, clear errors.
import { describe, expect, it } from 'vitest';
import { forwardFlags, parseArgs, parseBytes, UsageError } from '../../src/cli/args.js';
import { buildConfig, formatEngineAddress, parseEngineAddress } from '../../src/cli/config.js';

const cfg = (argv: string[], env: Record<string, string> = {}) => buildConfig(parseArgs(argv, env));
const usage = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error('expected a UsageError');
};

describe('parseArgs', () => {
  it('reads --flag value, --flag=value, underscores, booleans and negations', () => {
    const a = parseArgs(['serve', '--model', '/m', '--max_model_len=4096', '--no-enable-prefix-caching', '--enforce-eager', '--port', '9000']);
    expect(a).toEqual({
      command: 'serve',
      flags: { model: '/m', 'max-model-len': 4096, 'enable-prefix-caching': false, 'enforce-eager': true, port: 9000 },
    });
  });

  it('takes a positional model after the command, as `vllm serve MODEL`', () => {
    expect(parseArgs(['serve', 'baidu/ERNIE-4.5-0.3B-PT']).flags.model).toBe('baidu/ERNIE-4.5-0.3B-PT');
    expect(parseArgs([]).command).toBe('serve');
  });

  it('rejects unknown flags (with a suggestion), missing and malformed values, repeats', () => {
    expect(usage(() => parseArgs(['--bogus']))).toBe('unknown option --bogus (see --help)');
    expect(usage(() => parseArgs(['--max-num-seq', '4']))).toMatch(/did you mean --max-num-seqs/);
    expect(usage(() => parseArgs(['--port']))).toMatch(/--port needs a value/);
    expect(usage(() => parseArgs(['--port', '--host', 'x']))).toMatch(/--port needs a value/);
    expect(usage(() => parseArgs(['--port', '80.5']))).toMatch(/expects an integer/);
    expect(usage(() => parseArgs(['--seed', '1', '--seed', '2']))).toMatch(/given twice/);
    expect(usage(() => parseArgs(['--no-port']))).toMatch(/unknown option --no-port/);
    expect(usage(() => parseArgs(['--enforce-eager=maybe']))).toMatch(/true or false/);
  });

  it('reads secrets from the environment when the flag is absent', () => {
    expect(parseArgs([], { ERNIE_EDGE_API_KEY: 'sk-env' }).flags['api-key']).toBe('sk-env');
    expect(parseArgs(['--api-key', 'sk-flag'], { ERNIE_EDGE_API_KEY: 'sk-env' }).flags['api-key']).toBe('sk-flag');
  });

  it('parses sizes', () => {
    expect(parseBytes('x', '2GiB')).toBe(2 * 2 ** 30);
    expect(parseBytes('x', '512M')).toBe(512e6);
    expect(parseBytes('x', '1024')).toBe(1024);
    expect(() => parseBytes('x', '2 parsecs')).toThrow(UsageError);
  });
});

describe('buildConfig', () => {
  it('has vLLM-like defaults', () => {
    const c = cfg([]);
    expect(c.role).toBe('serve');
    expect(c.gateway.listen).toEqual({ host: '127.0.0.1', port: 8000 });
    expect(c.sidecar.engine).toEqual({ maxNumSeqs: 256, maxNumBatchedTokens: undefined, enablePrefixCaching: true, seed: 0, prefillBatch: 1, prefillMaxWait: 8 });
    expect(c.sidecar.blockSize).toBe(16);
    expect(c.sidecar.maxNumQueuedReqs).toBe(1024);
    expect(c.gateway.drainTimeoutMs).toBe(30_000);
    expect(c.gateway.drainDelayMs).toBe(0);
    expect(c.notes).toEqual([]);
  });

  it('accepts the compatibility flags with a one-line note each; tensor parallelism > 1 is an error', () => {
    const c = cfg(['--enforce-eager', '--tensor-parallel-size', '1', '--swap-space', '4', '--trust-remote-code']);
    expect(c.notes).toHaveLength(3); // --enforce-eager is a real flag now (CUDA graphs off)
    expect(c.sidecar.enforceEager).toBe(true);
    for (const n of c.notes) expect(n).not.toContain('\n');
    expect(usage(() => cfg(['--tensor-parallel-size', '2']))).toMatch(/not supported.*one replica per device/);
  });

  it('parses --device and rejects unknown devices', () => {
    expect(cfg([]).sidecar.device).toBe('auto');
    expect(cfg(['--device', 'cuda']).sidecar.device).toBe('cuda');
    expect(usage(() => cfg(['--device', 'tpu']))).toMatch(/--device must be auto, cpu or cuda/);
  });

  it('parses --quantization (int8, or vLLM\'s w8a8), --lm-head-dtype and --lm-head-planes, and rejects other values', () => {
    expect(cfg([]).sidecar).toMatchObject({ quantization: 'none', lmHeadInt8: true });
    expect(cfg(['--quantization', 'int8']).sidecar).toMatchObject({ quantization: 'int8', lmHeadInt8: true });
    expect(cfg(['--quantization', 'w8a8', '--lm-head-dtype', 'bfloat16', '--dtype', 'bfloat16']).sidecar).toMatchObject({ quantization: 'int8', lmHeadInt8: false, precise: false });
    expect(usage(() => cfg(['--quantization', 'fp8']))).toMatch(/--quantization must be none, int8 or w8a8, got fp8/);
    expect(usage(() => cfg(['--lm-head-dtype', 'int4']))).toMatch(/--lm-head-dtype must be auto or bfloat16, got int4/);
    expect(cfg([]).sidecar.lmHeadPrecise).toBeUndefined();
    expect(cfg(['--lm-head-planes', 'auto']).sidecar.lmHeadPrecise).toBeUndefined();
    expect(cfg(['--quantization', 'int8', '--lm-head-planes', '1']).sidecar).toMatchObject({ precise: true, lmHeadPrecise: false });
    expect(cfg(['--dtype', 'bfloat16', '--lm-head-planes', '2']).sidecar).toMatchObject({ precise: false, lmHeadPrecise: true });
    expect(usage(() => cfg(['--lm-head-planes', '3']))).toMatch(/--lm-head-planes must be auto, 1 or 2, got 3/);
  });

  it('parses --dtype (auto = float32) and --kv-cache-dtype (auto: left to the plan) and rejects other types', () => {
    expect(cfg([]).sidecar).toMatchObject({ precise: true, kvCacheDtype: undefined });
    expect(cfg(['--kv-cache-dtype', 'auto']).sidecar).toMatchObject({ kvCacheDtype: undefined });
    expect(cfg(['--dtype', 'bfloat16', '--kv-cache-dtype', 'bfloat16']).sidecar).toMatchObject({ precise: false, kvCacheDtype: 'bfloat16' });
    expect(cfg(['--dtype', 'auto', '--kv-cache-dtype', 'float32']).sidecar).toMatchObject({ precise: true, kvCacheDtype: 'float32' });
    expect(usage(() => cfg(['--kv-cache-dtype', 'fp8']))).toMatch(/--kv-cache-dtype must be auto, float32 or bfloat16, got fp8 \(no 8-bit KV cache: .*bfloat16 halves the cache/);
    expect(usage(() => cfg(['--kv-cache-dtype', 'q8_0']))).toMatch(/got q8_0 \(no 8-bit KV cache/);
    expect(usage(() => cfg(['--kv-cache-dtype', 'half']))).toMatch(/got half$/);
    expect(usage(() => cfg(['--dtype', 'half']))).toMatch(/--dtype must be/);
  });

  it('checks role requirements, engine addresses and memory flags', () => {
    expect(usage(() => cfg(['--role', 'gateway']))).toMatch(/exactly one --engine/);
    expect(usage(() => cfg(['--role', 'sidecar']))).toMatch(/needs --engine/);
    expect(usage(() => cfg(['--role', 'both']))).toMatch(/serve, sidecar or gateway/);
    expect(usage(() => cfg(['--role', 'sidecar', '--engine', 'tcp://127.0.0.1:7000']))).toMatch(/needs --engine-secret/);
    const ok = cfg(['--role', 'sidecar', '--engine', 'unix:/run/e.sock', '--engine', 'tcp://127.0.0.1:7000'], { ERNIE_EDGE_ENGINE_SECRET: 's' });
    expect(ok.engines).toEqual([
      { kind: 'unix', path: '/run/e.sock' },
      { kind: 'tcp', host: '127.0.0.1', port: 7000 },
    ]);
    expect(usage(() => cfg(['--gpu-memory-utilization', '1.5']))).toMatch(/\(0, 1\]/);
    expect(usage(() => cfg(['--gpu-memory-utilization', '0.5', '--kv-cache-memory', '1G']))).toMatch(/not both/);
    expect(cfg(['--kv-cache-memory', '1GiB']).sidecar.kvCacheMemory).toBe(2 ** 30);
    expect(usage(() => cfg(['--max-num-seqs', '0']))).toMatch(/≥ 1/);
    expect(cfg(['--prefill-batch', '8', '--prefill-max-wait', '0']).sidecar.engine).toMatchObject({ prefillBatch: 8, prefillMaxWait: 0 });
    expect(usage(() => cfg(['--prefill-batch', '0']))).toMatch(/≥ 1/);
  });

  it('reads --uds, --allowed-origins forms and the API key', () => {
    expect(cfg(['--uds', '/tmp/api.sock']).gateway.listen).toEqual({ path: '/tmp/api.sock' });
    expect(cfg(['--allowed-origins', '["https://a.example","https://b.example"]']).gateway.allowedOrigins).toEqual(['https://a.example', 'https://b.example']);
    expect(cfg(['--allowed-origins', 'https://a.example, https://b.example']).gateway.allowedOrigins).toEqual(['https://a.example', 'https://b.example']);
    expect(cfg(['--allowed-origins', '*']).gateway.allowedOrigins).toBe('*');
    expect(usage(() => cfg(['--allowed-origins', '[1,2]']))).toMatch(/JSON list of strings/);
    expect(cfg(['--api-key', 'k']).gateway.apiKey).toBe('k');
  });
});

describe('engine addresses and forwarding', () => {
  it('parses and formats unix: and tcp:// addresses', () => {
    for (const s of ['unix:/a/b.sock', 'tcp://127.0.0.1:7000', 'tcp://[::1]:7000']) expect(formatEngineAddress(parseEngineAddress(s))).toBe(s);
    expect(parseEngineAddress('unix:///a.sock')).toEqual({ kind: 'unix', path: '/a.sock' });
    expect(() => parseEngineAddress('http://x:1')).toThrow(UsageError);
    expect(() => parseEngineAddress('tcp://x:99999')).toThrow(UsageError);
  });

  it('forwards engine flags to the sidecar child, never secrets or gateway flags', () => {
    const a = parseArgs(['--model', '/m', '--port', '1', '--api-key', 'k', '--no-enable-prefix-caching', '--engine-secret', 's', '--max-model-len', '64']);
    expect(forwardFlags(a.flags, 'engine', ['role'])).toEqual(['--model=/m', '--max-model-len=64', '--no-enable-prefix-caching']);
  });
});
