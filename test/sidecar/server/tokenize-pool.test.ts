// Large inputs are tokenized off the sidecar's main thread (src/sidecar/server/tokenize-pool.ts), after
// size checks that run before any tokenizing (src/sidecar/server/input-size.ts). Issue #26: 4 x
// /tokenize of a 4 MB prompt froze every stream of the sidecar for 5.2 s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, type ChatMessage } from '../../../src/protocol/engine-client.js';
import { MAX_CHAT_MESSAGES } from '../../../src/protocol/limits.js';
import { TokenizePool } from '../../../src/sidecar/server/tokenize-pool.js';
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
