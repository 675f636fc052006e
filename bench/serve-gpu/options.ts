// bench/serve-gpu.ts's options: the workload (the one issue #23 measured: token-id prompts of 32–512,
// 64–256 new tokens, ignore_eos, greedy) and its sizes, overridable by flags so the same harness
// proves itself on a CPU with small sizes (bench/README.md shows the command).
import { parseArgs } from 'node:util';

export interface ServeGpuOptions {
  outDir: string;
  device: 'cuda' | 'cpu';
  precisions: ('bfloat16' | 'float32')[];
  levels: number[];
  /** Requests per level (default 3 per stream, at least 48: a c=1 level's TTFT p50 is then the steady
   *  state's, not that of the first requests of a fresh client process; bench/README.md). */
  prompts: number[];
  inputLen: string; // N or MIN-MAX, as `bench serve --random-input-len`
  outputLen: string;
  seed: number;
  /** --max-num-batched-tokens of both the engine and the server (default: serve's for the device). */
  maxNumBatchedTokens: number;
  maxModelLen: number;
  /** After the measured runs: one more streamed run of the first precision at this concurrency with
   *  every server process CPU-profiled (profiles in OUT/prof); null: none. */
  profileLevel: number | null;
}

const list = (s: string) => s.split(',').map((x) => Number(x.trim()));

export function serveGpuOptions(argv: string[]): ServeGpuOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      device: { type: 'string', default: 'cuda' },
      precisions: { type: 'string', default: 'bfloat16,float32' },
      levels: { type: 'string', default: '1,64,256,512' },
      prompts: { type: 'string' },
      'input-len': { type: 'string', default: '32-512' },
      'output-len': { type: 'string', default: '64-256' },
      seed: { type: 'string', default: '1' },
      'max-num-batched-tokens': { type: 'string' },
      'max-model-len': { type: 'string', default: '4096' },
      'profile-level': { type: 'string' },
    },
  });
  const device = values.device as 'cuda' | 'cpu';
  if (device !== 'cuda' && device !== 'cpu') throw new Error(`--device cuda|cpu, got ${values.device}`);
  const levels = list(values.levels);
  const prompts = values.prompts ? list(values.prompts) : levels.map((c) => Math.max(48, 3 * c));
  if (prompts.length !== levels.length || [...levels, ...prompts].some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--levels and --prompts: positive integers, as many of each');
  const precisions = values.precisions.split(',') as ServeGpuOptions['precisions'];
  if (precisions.some((p) => p !== 'bfloat16' && p !== 'float32')) throw new Error(`--precisions: bfloat16 and/or float32, got ${values.precisions}`);
  return {
    outDir: positionals[0] ?? '/tmp/serve-gpu-out',
    device,
    precisions,
    levels,
    prompts,
    inputLen: values['input-len'],
    outputLen: values['output-len'],
    seed: Number(values.seed),
    maxNumBatchedTokens: Number(values['max-num-batched-tokens'] ?? (device === 'cuda' ? 2048 : 512)),
    maxModelLen: Number(values['max-model-len']),
    profileLevel: values['profile-level'] ? Number(values['profile-level']) : null,
  };
}

/** `bench serve`'s workload flags for these options (the engine side builds its requests from the same). */
export function workloadFlags(o: ServeGpuOptions, only?: { level: number; prompts: number }): string[] {
  return [
    '--dataset-name', 'random', '--endpoint', '/v1/completions',
    '--random-input-len', o.inputLen, '--random-output-len', o.outputLen, '--random-vocab-size', '100000',
    // Greedy with on-device sampling, as the issue measured: no logprobs (they send every step's
    // logits to the host sampler); token arrivals are counted by return_token_ids instead.
    '--ignore-eos', '--temperature', '0', '--return-token-ids', '--seed', String(o.seed),
    '--max-concurrency', only ? String(only.level) : o.levels.join(','), '--num-prompts', only ? String(only.prompts) : o.prompts.join(','),
  ];
}
