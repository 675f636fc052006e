// adapters/workers.ts under `wrangler dev` (local workerd, no network): a fake-engine sidecar on an
// ephemeral TCP port with a shared secret, the Worker reaching it through cloudflare:sockets connect(),
// and the official openai SDK against the Worker — chat and completions, streaming and not.
// Skips (saying why) only when the workerd binary cannot run on this machine.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir, type CliProcess } from '../cli/process-helpers.js';
import { Proc, SECRET, startTcpSidecar } from './deploy-helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);
const WRANGLER = path.join(path.dirname(require.resolve('wrangler/package.json')), 'bin', 'wrangler.js');
const WORKERD = path.join(path.dirname(require.resolve('workerd/package.json')), 'bin', 'workerd');
const probe = spawnSync(process.execPath, [WORKERD, '--version'], { encoding: 'utf8', timeout: 30_000 });
const workerdError = probe.status === 0 ? null : `workerd cannot run here: ${probe.error?.message ?? probe.stderr.trim()}`;
if (workerdError) console.warn(`[wrangler.e2e] skipped: ${workerdError}`);

const KEY = 'sk-worker-key';
let sidecar: CliProcess;
let wrangler: Proc;
let base: string;
const client = () => new OpenAI({ apiKey: KEY, baseURL: `${base}/v1`, maxRetries: 0 });
const messages = [{ role: 'user' as const, content: '你好' }];

describe.skipIf(workerdError !== null)('wrangler dev (adapters/workers.ts)', () => {
  beforeAll(async () => {
    const sc = await startTcpSidecar();
    sidecar = sc.proc;
    const logs = tempDir('ernie-wrangler-');
    wrangler = new Proc(
      process.execPath,
      [WRANGLER, 'dev', '--ip', '127.0.0.1', '--port', '0', '--inspector-port', '0', '--persist-to', logs,
        '--var', `ENGINE:${sc.engine}`, '--var', `ERNIE_EDGE_ENGINE_SECRET:${SECRET}`, '--var', `API_KEY:${KEY}`],
      {
        cwd: ROOT,
        detached: true, // its own process group: workerd is its child, and cleanup signals the group
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_LOG_PATH: logs, CI: 'true' },
      },
    );
    base = (await wrangler.waitFor(/Ready on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
  }, 90_000);

  afterAll(async () => {
    wrangler?.kill('SIGTERM', true);
    const gone = await Promise.race([wrangler?.exited, new Promise((r) => setTimeout(() => r(null), 5000))]);
    if (gone === null) wrangler.kill('SIGKILL', true);
    await wrangler?.exited;
    sidecar?.kill('SIGTERM');
    await sidecar?.exited;
    removeTempDirs();
  });

  it('answers health, readiness (the sidecar is up) and the API key check', async () => {
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect(await (await fetch(`${base}/ready`)).json()).toMatchObject({ ready: true });
    expect((await fetch(`${base}/v1/models`)).status).toBe(401);
    const models = await client().models.list();
    expect(models.data.map((m) => m.id)).toEqual(['m']);
  });

  it('chat: non-streaming with n=2', async () => {
    const r = await client().chat.completions.create({ model: 'm', messages, max_tokens: 4, n: 2 });
    expect(r.object).toBe('chat.completion');
    expect(r.choices).toHaveLength(2);
    expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(r.usage?.completion_tokens).toBe(8);
  });

  it('chat: streaming with include_usage', async () => {
    const stream = await client().chat.completions.create({ model: 'm', messages, max_tokens: 6, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe('length');
    expect(usage?.completion_tokens).toBe(6);
  });

  it('completions: non-streaming and streaming give the same text (fake engine is deterministic)', async () => {
    const r = await client().completions.create({ model: 'm', prompt: 'Hello', max_tokens: 5, seed: 1 });
    expect(r.object).toBe('text_completion');
    expect(r.usage?.completion_tokens).toBe(5);
    const stream = await client().completions.create({ model: 'm', prompt: 'Hello', max_tokens: 5, seed: 1, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(r.choices[0]!.text);
  });

  it('maps engine errors to OpenAI errors and keeps serving; /metrics accumulates across requests', async () => {
    await expect(client().completions.create({ model: 'm', prompt: 'x', max_tokens: 100_000 })).rejects.toMatchObject({ status: 400 });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/vllm:num_requests_waiting\{model_name="m"\} 0/);
    const count = Number(/vllm:e2e_request_latency_seconds_count\{model_name="m"\} (\d+)/.exec(metrics)?.[1]);
    expect(count).toBeGreaterThanOrEqual(4);
  });
});
