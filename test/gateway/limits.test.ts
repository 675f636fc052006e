// The per-request limits of src/protocol/limits.ts as a client meets them: accepted at the limit,
// a 400 naming the param one past it. (The engine's side: test/engine/engine.test.ts.)
import { describe, expect, it } from 'vitest';
import { MAX_LOGPROBS, MAX_N } from '../../src/protocol/limits.js';
import { MODEL, expectError, setup } from './helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON, read path by path in assertions
type Any = Record<string, any>;
const chat = (extra: Any) => ({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...extra });
const completion = (extra: Any) => ({ model: MODEL, prompt: 'hi', max_tokens: 2, ...extra });

describe('per-request limits', () => {
  it(`n: ${MAX_N} choices are served, ${MAX_N + 1} is a 400 (chat and completions, best_of too)`, async () => {
    const { post } = setup();
    const c = (await (await post('/v1/chat/completions', chat({ n: MAX_N }))).json()) as Any;
    expect(c.choices.map((x: Any) => x.index)).toEqual([...Array(MAX_N).keys()]);
    const t = (await (await post('/v1/completions', completion({ n: MAX_N, best_of: MAX_N }))).json()) as Any;
    expect(t.choices).toHaveLength(MAX_N);
    expect((await expectError(await post('/v1/chat/completions', chat({ n: MAX_N + 1 })), 400)).param).toBe('n');
    expect((await expectError(await post('/v1/completions', completion({ n: MAX_N + 1 })), 400)).param).toBe('n');
    expect((await expectError(await post('/v1/completions', completion({ best_of: MAX_N + 1 })), 400)).param).toBe('best_of');
  });

  it(`logprobs: ${MAX_LOGPROBS} alternatives per token are served, ${MAX_LOGPROBS + 1} is a 400`, async () => {
    const { post } = setup();
    const c = (await (await post('/v1/chat/completions', chat({ logprobs: true, top_logprobs: MAX_LOGPROBS }))).json()) as Any;
    for (const e of c.choices[0].logprobs.content) expect(e.top_logprobs).toHaveLength(MAX_LOGPROBS);
    const t = (await (await post('/v1/completions', completion({ logprobs: MAX_LOGPROBS }))).json()) as Any;
    for (const d of t.choices[0].logprobs.top_logprobs) expect(Object.keys(d)).toHaveLength(MAX_LOGPROBS);
    const over = chat({ logprobs: true, top_logprobs: MAX_LOGPROBS + 1 });
    expect((await expectError(await post('/v1/chat/completions', over), 400)).param).toBe('top_logprobs');
    expect((await expectError(await post('/v1/completions', completion({ logprobs: MAX_LOGPROBS + 1 })), 400)).param).toBe('logprobs');
  });

  it('prompts x n above --max-num-seqs (ModelInfo.maxNumSeqs) is a 400 saying why; at the limit it is served', async () => {
    const { post } = setup({}, { model: { maxNumSeqs: 8 } });
    const eight = Array.from({ length: 8 }, (_, i) => `p${i}`);
    const big = await expectError(await post('/v1/completions', completion({ prompt: eight, n: 16 })), 400);
    expect(big.param).toBe('prompt');
    expect(big.message).toMatch(/8 prompts x n=16 = 128 sequences running together, but this server runs at most 8 \(--max-num-seqs\)/);
    const n16 = await expectError(await post('/v1/chat/completions', chat({ n: 16 })), 400);
    expect(n16.param).toBe('n');
    expect(n16.message).toMatch(/n=16 sequences running together, but this server runs at most 8/);
    const ok = (await (await post('/v1/completions', completion({ prompt: eight.slice(0, 2), n: 4 }))).json()) as Any;
    expect(ok.choices).toHaveLength(8);
  });
});
