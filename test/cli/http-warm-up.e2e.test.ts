// The gateway's warm-up (src/cli/http-warm-up.ts) against `ernie-edge serve` on the real native engine
// (a tiny formula checkpoint): it runs before /ready turns 200, and leaves nothing a user sees: no
// request in /metrics' HTTP and request series, and no block in the prefix cache (the same requests sent
// afterwards by a user find no cached token).
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warmUpBodies } from '../../src/cli/http-warm-up.js';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { GOLDEN } from '../engine/helpers.js';
import { CliProcess, pollStatus, removeTempDirs, tempDir } from './process-helpers.js';

const VOCAB = 3072;
let proc: CliProcess;
let base: string;

beforeAll(async () => {
  const dir = tempDir('ernie-warm-');
  const config = JSON.parse(await readFile(path.join(GOLDEN, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: VOCAB, max_position_embeddings: 2048 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(GOLDEN, 'tokenizer', 'hf', f), path.join(dir, f));
  proc = new CliProcess(
    ['serve', '--model', dir, '--served-model-name', 'tiny', '--port', '0', '--threads', '1', '--kv-cache-memory', '64MiB', '--api-server-warmup-requests', '10'],
    { ERNIE_EDGE_CACHE: tempDir('ernie-cache-') },
  );
  base = await proc.baseURL();
  await pollStatus(`${base}/ready`, 200, 60_000);
}, 90_000);

afterAll(async () => {
  proc?.kill('SIGTERM');
  await proc?.exited;
  removeTempDirs();
});

describe('the gateway warm-up on the real engine', () => {
  it('is done before /ready answers 200, and left no HTTP or request metric and no log line of its requests', async () => {
    const done = proc.logs.find((l) => l.msg?.startsWith('gateway warm-up done'));
    expect(done).toMatchObject({ warmUpRequests: 10 });
    expect(proc.logs.filter((l) => l.msg === 'request' && l.route !== '/ready')).toEqual([]);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).not.toMatch(/^http_requests_total\{method="POST"/m);
    expect(metrics).toMatch(/^vllm:request_success_total\{[^}]*finished_reason="length"\} 0$/m);
  });

  it('left nothing in the prefix cache: its own requests, sent again, find no cached token', async () => {
    for (const { path: p, body } of warmUpBodies(VOCAB, 16)) { // serve's default --block-size
      if (body.stream) continue; // the usage of the whole responses is enough, and the same prompts
      const res = await fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      const { usage } = (await res.json()) as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
      expect(usage.prompt_tokens).toBeGreaterThan(0);
      expect(usage.prompt_tokens).toBeLessThan(16); // no full block to cache
      expect(usage.prompt_tokens_details.cached_tokens).toBe(0);
    }
  });
});
