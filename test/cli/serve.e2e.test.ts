// End to end: `serve` as a real process tree (gateway + supervised sidecar child) with the fake native
// engine injected (test/doubles/fake-bin.js, which the supervisor also runs for the child): readiness,
// the official openai SDK, graceful SIGTERM with a stream in flight, and kill -9 of the sidecar mid-stream.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUpProcesses, CliProcess, FAKE_BIN, fakeEnv, pollStatus, sseFrames, tempDir } from './process-helpers.js';

const MODEL = 'ernie-edge-default';
const procs: CliProcess[] = [];
afterEach(() => cleanUpProcesses(procs));

function serve(stepMs: number, extra: string[] = []): CliProcess {
  const p = new CliProcess(['serve', '--port', '0', '--drain-timeout', '20', ...extra], fakeEnv(tempDir('ernie-cache-'), stepMs), FAKE_BIN);
  procs.push(p);
  return p;
}

async function streamCompletion(base: string, body: object): Promise<Response> {
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, ...body }),
  });
  expect(res.status).toBe(200);
  return res;
}

describe('ernie-edge serve (fake engine)', () => {
  it('is live before ready, serves the openai SDK, and drains an in-flight stream on SIGTERM', async () => {
    const p = serve(15);
    const base = await p.baseURL();
    // The gateway listens before the sidecar child even exists: alive, not ready.
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/ready`)).status).toBe(503);
    await pollStatus(`${base}/ready`, 200);

    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: '你好' }], max_tokens: 200 });
    expect(r.choices[0]!.finish_reason).toBe('stop'); // one lap of the fake corpus, then eos
    expect(r.choices[0]!.message.content!.length).toBeGreaterThan(10);
    expect(r.choices[0]!.message.content).not.toContain('\uFFFD');
    expect(r.usage!.completion_tokens).toBeGreaterThan(10);

    const s = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: '春天' }], max_tokens: 200, stream: true });
    let text = '';
    for await (const chunk of s) {
      const piece = chunk.choices[0]?.delta.content ?? '';
      expect(piece).not.toContain('\uFFFD');
      text += piece;
    }
    expect(text).toMatch(/[\u4e00-\u9fff]/);

    // SIGTERM with a stream in flight: it still completes, then the process exits 0.
    const res = await streamCompletion(base, { prompt: 'Hi', max_tokens: 60, ignore_eos: true });
    const frames = sseFrames(res);
    const firstFrame = await frames.next();
    expect(firstFrame.done).toBe(false);
    p.kill('SIGTERM');
    const rest: string[] = [];
    for await (const f of frames) rest.push(f);
    expect(rest.at(-1)).toBe('[DONE]');
    const last = JSON.parse(rest.at(-2)!) as { choices: { finish_reason: string }[] };
    expect(last.choices[0]!.finish_reason).toBe('length');
    expect(await p.closed).toBe(0);
    expect(p.logs.some((l) => l.msg === 'gateway drained')).toBe(true);
  });

  it('kill -9 of the sidecar mid-stream: error event, gateway stays up, sidecar restarted', async () => {
    const p = serve(20);
    const base = await p.baseURL();
    const ready = await p.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    const res = await streamCompletion(base, { prompt: 'Hi', max_tokens: 500, ignore_eos: true });
    const frames = sseFrames(res);
    expect((await frames.next()).done).toBe(false);
    process.kill(Number(ready.sidecarPid), 'SIGKILL');
    const rest: string[] = [];
    for await (const f of frames) rest.push(f);
    const errorFrame = rest.map((f) => (f === '[DONE]' ? null : (JSON.parse(f) as { error?: { message: string } }))).find((x) => x?.error);
    expect(errorFrame?.error?.message).toBeTruthy();
    expect((await fetch(`${base}/health`)).status).toBe(200);
    await p.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('SIDECAR DIED'));
    await p.waitForLog((l) => l.msg === 'sidecar ready' && l.starts === 2);
    await pollStatus(`${base}/ready`, 200);
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const r = await client.completions.create({ model: MODEL, prompt: 'again', max_tokens: 3 });
    expect(r.usage!.completion_tokens).toBe(3);
    p.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });
});
