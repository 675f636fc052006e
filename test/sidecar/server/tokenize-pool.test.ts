// Large inputs are tokenized off the sidecar's main thread (src/sidecar/server/tokenize-pool.ts), after
// size checks that run before any tokenizing (src/sidecar/server/input-size.ts). Issue #26: 4 x
// /tokenize of a 4 MB prompt froze every stream of the sidecar for 5.2 s.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, type ChatMessage } from '../../../src/protocol/engine-client.js';
import { MAX_CHAT_MESSAGES } from '../../../src/protocol/limits.js';
import { RECYCLE_CHARS, TokenizePool } from '../../../src/sidecar/server/tokenize-pool.js';
import { BULK_NICE } from '../../../src/sidecar/server/thread-priority.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { TOKENIZER_DIR, makeHost, sampling } from './helpers.js';

let pool: TokenizePool;
let bundle: TokenizerBundle;
beforeAll(async () => {
  bundle = await loadTokenizerBundle(TOKENIZER_DIR, { maxModelLen: 256 });
  pool = await TokenizePool.start({ dir: TOKENIZER_DIR, options: { maxModelLen: 256 }, vocabSize: 103424 }, 1);
});
afterAll(() => pool.close());

const text = (chars: number) => 'Streams must not wait for megabytes: 你好，世界。 '.repeat(Math.ceil(chars / 42)).slice(0, chars);
const chat = (n: number): ChatMessage[] => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}: ${text(50)}` }));

/** The longest wait of this thread's event loop (setImmediate to setImmediate) while `work` runs. */
async function loopGap(work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.finally(() => (done = true)).catch(() => {});
  let gap = 0;
  let last = performance.now();
  while (!done) {
    await new Promise((r) => setImmediate(r));
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }
  await work;
  return gap;
}

describe('tokenize pool', () => {
  it('gives the ids inline tokenization gives: prompts, chats, /tokenize bodies', async () => {
    const big = text(200_000);
    expect(await pool.encodePrompt({ kind: 'text', text: big }, big.length)).toEqual(bundle.encodePrompt(big));
    const msgs = chat(300);
    expect(await pool.encodePrompt({ kind: 'chat', messages: msgs, addGenerationPrompt: true }, 0)).toEqual(bundle.encodeChat(msgs, { addGenerationPrompt: true }));
    const req = { messages: msgs, addSpecialTokens: false, addGenerationPrompt: false };
    expect(Array.from(await pool.tokenize(req, 0))).toEqual(bundle.tokenize(req).tokens);
  });

  it('errors come back as the same EngineError values (code, message, param)', async () => {
    const err = await pool.tokenize({ messages: [{ role: 'user', content: 5 as unknown as string }], addSpecialTokens: false, addGenerationPrompt: true }, 0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'INVALID_REQUEST', param: 'messages[0]', message: 'messages[0] needs a string role and content' });
  });

  // 1 M characters each: off the main thread the size does not matter to the bound, only to how long
  // this test takes on a loaded CI machine (the 4 MB attack itself: test/cli/abuse-engine.e2e.test.ts).
  // The bound: 200 ms over this machine's idle noise, or, on a machine so loaded that one inline
  // tokenization of the same prompt takes over 800 ms, a quarter of that (tokenizing inline, the loop
  // would wait all of it, four times over).
  it('4 concurrent 1 MB /tokenize through the host: answered, and the event loop never waits for a tokenization', async () => {
    const { host } = await makeHost({ tokenizePool: pool });
    const big = text(1_000_000);
    const idle = await loopGap(new Promise((r) => setTimeout(r, 2000))); // this machine's own scheduling noise
    const t0 = performance.now();
    const inline = bundle.encodePrompt(big);
    const inlineMs = performance.now() - t0;
    const jobs = Promise.all(Array.from({ length: 4 }, () => host.tokenize({ prompt: big, addSpecialTokens: true, addGenerationPrompt: false })));
    const gap = await loopGap(jobs);
    const results = await jobs;
    console.log(`[pool] 4 x 1 M chars: longest event-loop wait ${gap.toFixed(1)} ms (idle: ${idle.toFixed(1)} ms; one inline tokenization: ${inlineMs.toFixed(0)} ms), ${results[0]!.tokens.length} tokens each`);
    for (const r of results) expect(Array.from(r.tokens)).toEqual(inline);
    expect(gap).toBeLessThan(Math.max(200, inlineMs / 4) + idle);
  }, 180_000);
});

describe('bulk threads', () => {
  // Linux only: elsewhere the worker keeps the process's priority and says why (thread-priority.ts).
  it.runIf(existsSync('/proc/thread-self'))(`the worker thread runs ${BULK_NICE} nice levels below the thread that started it, named ee-tokenize; this thread is untouched`, async () => {
    const mine = os.getPriority(); // this thread's (Linux: setpriority is per thread)
    const own = await TokenizePool.start({ dir: TOKENIZER_DIR, options: { maxModelLen: 256 }, vocabSize: 103424 }, 1);
    try {
      expect(own.priority).toEqual({ tid: expect.any(Number), nice: Math.min(19, mine + BULK_NICE) });
      const tid = (own.priority as { tid: number }).tid;
      expect(tid).not.toBe(process.pid);
      expect(os.getPriority(tid)).toBe(Math.min(19, mine + BULK_NICE));
      expect(readFileSync(`/proc/${process.pid}/task/${tid}/comm`, 'utf8').trim()).toBe('ee-tokenize');
      expect(os.getPriority()).toBe(mine);
    } finally {
      await own.close();
    }
  });

  it('a worker that tokenized RECYCLE_CHARS is replaced once idle (its memory goes with it); jobs meanwhile wait for the new one', async () => {
    const own = await TokenizePool.start({ dir: TOKENIZER_DIR, options: { maxModelLen: 256 }, vocabSize: 103424 }, 1, 0);
    try {
      const small = text(20_000);
      const first = await own.tokenize({ prompt: small, addSpecialTokens: true }, small.length);
      expect(own.started).toBe(1);
      const big = text(RECYCLE_CHARS);
      // The big job retires the worker when it answers; the next job, given at once, waits for the replacement.
      const [bigIds, again] = await Promise.all([
        own.tokenize({ prompt: big, addSpecialTokens: true }, big.length),
        own.tokenize({ prompt: small, addSpecialTokens: true }, small.length).then(async (x) => {
          return { x, after: await own.tokenize({ prompt: small, addSpecialTokens: true }, small.length) };
        }),
      ]);
      expect(Array.from(bigIds)).toEqual(bundle.tokenize({ prompt: big, addSpecialTokens: true }).tokens);
      expect(Array.from(again.x)).toEqual(Array.from(first));
      expect(Array.from(again.after)).toEqual(Array.from(first));
      expect(own.started).toBe(2);
      expect(own.queuedChars).toBe(0);
      // Below the threshold nothing is replaced.
      await own.tokenize({ prompt: small, addSpecialTokens: true }, small.length);
      expect(own.started).toBe(2);
    } finally {
      await own.close();
    }
  }, 120_000);
});

describe('size checks before tokenizing', () => {
  it(`a chat of more than ${MAX_CHAT_MESSAGES} messages, and a prompt that cannot fit max_model_len, are refused before any tokenizing`, async () => {
    const { host, engine } = await makeHost({ tokenizePool: pool, maxModelLen: 256 });
    const queued = pool.queuedChars;
    const refuse = async (prompt: Parameters<typeof host.stream>[0]['prompt']) => {
      const it = host.stream({ id: 'r', prompt, sampling: sampling(), n: 1, echo: false })[Symbol.asyncIterator]();
      return it.next().then(() => null, (e: unknown) => e as EngineError);
    };
    const many = await refuse({ kind: 'chat', messages: chat(MAX_CHAT_MESSAGES + 1), addGenerationPrompt: true });
    expect(many).toMatchObject({ code: 'INVALID_REQUEST', param: 'messages', message: `A chat may have at most ${MAX_CHAT_MESSAGES} messages; this one has ${MAX_CHAT_MESSAGES + 1}.` });
    const long = await refuse({ kind: 'chat', messages: [{ role: 'user', content: text(4_000_000) }], addGenerationPrompt: true });
    expect(long).toMatchObject({ code: 'INVALID_REQUEST', param: 'messages' });
    expect(long!.message).toMatch(/^This model's maximum context length is 256 tokens\. However, the messages has 4000000 characters, which encode to at least \d+ tokens/);
    expect(pool.queuedChars).toBe(queued); // nothing was sent to be tokenized
    expect(engine.submitted).toHaveLength(0);
  });
});
