// The first token leaves as soon as the engine produced it: over the whole serving path on real
// sockets (HTTP server → gateway → Unix socket → sidecar's EngineHost and back), with the fake engine
// stepping only when the test says so. After ONE engine step, and with every timer of this process
// frozen (setTimeout / setInterval / setImmediate faked and never advanced), the client must read the
// first token's SSE chunk: no stage may wait for a later step, a timer, an idle wake-up or a batch to
// fill before it sends, nor for text: a token whose text is held back or empty (an id the tokenizer
// has no piece for, as the embedded placeholder's formula weights mostly emit) still makes its chunk,
// with text '' (vLLM does the same). (The CUDA side of time to first token, graphs captured while loading and
// never inside a served step, is test/engine/cuda.test.ts's.)
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { serveNode } from '../../src/cli/node-server.js';
import { createApp } from '../../src/gateway/app.js';
import { createUnixEngineClient, listenUnix } from '../../src/protocol/node-socket.js';
import { makeHost } from '../sidecar/server/helpers.js';

// Captured before any faking: bounds a wait that would otherwise hang, so a failure reads as one.
const realSetTimeout = globalThis.setTimeout;
const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The next SSE `data:` payload on `res`, or 'timed out' (a guard only: the test never waits on it to pass). */
function nextData(res: IncomingMessage, buf: { text: string }): Promise<string> {
  return new Promise((resolve) => {
    const guard = realSetTimeout(() => finish('timed out'), 10_000);
    const onData = (d: Buffer) => {
      buf.text += d.toString();
      const i = buf.text.indexOf('\n\n');
      if (i < 0) return;
      const frame = buf.text.slice(0, i);
      buf.text = buf.text.slice(i + 2);
      finish(frame.replace(/^data: /, ''));
    };
    const finish = (v: string) => {
      clearTimeout(guard);
      res.off('data', onData);
      res.pause();
      resolve(v);
    };
    res.on('data', onData);
    res.resume();
  });
}

describe('time to first token over the serving path', () => {
  // The fake engine's first token: one that decodes to text, or id 50000 (in the model's vocabulary,
  // past the test tokenizer's pieces: no text).
  it.each([
    ['completions, a token with text', 'completions', undefined, (t: string) => expect(t.length).toBeGreaterThan(0)],
    ['completions, a token without text', 'completions', [50000, 50001, 50002], (t: string) => expect(t).toBe('')],
    ['chat, a token without text', 'chat/completions', [50000, 50001, 50002], (t: string) => expect(t).toBe('')],
  ] as const)('%s: its chunk is sent after the engine first step, with no timer run and no second step', async (_, route, script, checkText) => {
    const env = await makeHost(script ? { script: () => script } : {});
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ernie-first-token-'));
    dirs.push(dir);
    const sock = path.join(dir, 'engine.sock');
    const sidecar = await listenUnix(sock, env.host);
    const engine = createUnixEngineClient(sock);
    const handle = createApp({ engine });
    const gw = await serveNode({ handle, engine, listen: { host: '127.0.0.1', port: 0 }, drainTimeoutMs: 1000 });
    const { port } = gw.address as { port: number };
    // A first request connects the engine client (its handshake) before the clocks are frozen.
    expect((await handle.app.request('/v1/models')).status).toBe(200);

    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'setImmediate'] });
    const input = route === 'chat/completions' ? { messages: [{ role: 'user', content: 'hi' }] } : { prompt: [11, 12, 13, 14] };
    const body = JSON.stringify({ model: 'test-model', ...input, max_tokens: 8, temperature: 0, ignore_eos: true, stream: true });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: `/v1/${route}`, method: 'POST', headers: { 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    expect(res.statusCode).toBe(200); // committed at the engine's `accepted`, before any step
    expect(env.engine.submitted).toHaveLength(1);

    const stepped = env.engine.step(); // the prefill step: the first token
    expect(stepped).toHaveLength(1);
    const buf = { text: '' };
    let first = await nextData(res, buf);
    // chat opens with the role chunk (sent at `accepted`); the token's chunk follows it
    if (route === 'chat/completions' && first !== 'timed out') first = await nextData(res, buf);
    expect(first).not.toBe('timed out');
    type Choice = { text?: string; delta?: { role?: string; content?: string }; finish_reason: string | null };
    const choice = (JSON.parse(first) as { choices: Choice[] }).choices[0]!;
    expect(choice.delta?.role).toBeUndefined();
    checkText(choice.text ?? choice.delta!.content!);
    expect(choice.finish_reason).toBeNull();

    vi.useRealTimers();
    while (env.engine.step().length > 0);
    let rest = buf.text;
    for await (const d of res) rest += (d as Buffer).toString();
    expect(rest.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await gw.shutdown();
    await sidecar.close();
  });
});
