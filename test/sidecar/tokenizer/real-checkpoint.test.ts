// A checkpoint directory of the real ERNIE-4.5-0.3B side files (../shared, never copied into the repo)
// with the test tokenizer files: added_tokens.json ids 100295..101303 lie far beyond the 3,000-piece
// test vocabulary and must still work.

import { afterAll, describe, expect, it } from 'vitest';
import { loadTokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { HAS_SHARED, SHARED_SKIP_REASON, golden, makeRealErnieCheckpoint, removeCheckpoints } from './helpers.js';

afterAll(removeCheckpoints);

if (!HAS_SHARED) console.warn(SHARED_SKIP_REASON);

describe.skipIf(!HAS_SHARED).each([
  ['sentencepiece', ['model'] as Array<'model' | 'json'>],
  ['hf-json', ['json'] as Array<'model' | 'json'>],
] as const)('real ERNIE side files + test %s', (kind, files) => {
  it('loads, with 101,304 ids and the added tokens where ERNIE has them', async () => {
    const b = await loadTokenizerBundle(await makeRealErnieCheckpoint(files));
    const t = b.tokenizer;
    expect(t.kind).toBe(kind);
    expect(t.size).toBe(101_304);
    expect(b.maxModelLen).toBe(131_072); // config.json max_position_embeddings
    expect(b.template.source).toBe('tokenizer_config.json');
    expect(b.eosIds).toEqual([2, 4]);
    expect(t.tokenToId('<|LOC_0|>')).toBe(100_297);
    expect(t.tokenToId('<|IMAGE_SEP|>')).toBe(101_303);
    expect(t.specialIds.has(100_297)).toBe(true);
    // parsed from trusted text, plain text when untrusted, decoded back either way
    const text = 'box <|LOC_12|><|LOC_1000|> end';
    const ids = t.encode(text);
    expect(ids).toContain(100_309);
    expect(ids).toContain(101_297);
    expect(t.decode(ids)).toBe(text);
    expect(t.decode(ids, { skipSpecialTokens: true })).toBe('box  end');
    const untrusted = t.encode(text, { parseSpecial: false });
    expect(untrusted.every((id) => id < 3000)).toBe(true);
    expect(t.decode(untrusted)).toBe(text);
    // <|IMAGE_PLACEHOLDER|> is a piece of the test vocabulary (13) AND 100295 in added_tokens.json: the
    // tokenizer file wins for encoding, both ids decode to it.
    expect(t.encode('<|IMAGE_PLACEHOLDER|>')).toEqual([13]);
    expect(t.decode([100_295])).toBe('<|IMAGE_PLACEHOLDER|>');
    // the padding rows between 101,304 and 103,424 decode to nothing, and so do gaps in the id range
    expect(t.decode([101_304, 103_423, 50_000])).toBe('');
    // still the reference encoding
    for (const c of golden.cases.slice(0, 17)) expect(t.encode(c.text)).toEqual(c.ids);
    const c = golden.chat_template[1]!;
    expect(b.renderChat(c.messages, { addGenerationPrompt: c.add_generation_prompt })).toBe(c.rendered);
    expect(b.source).toContain('added_tokens.json');
  });

  it('streams LOC tokens as special text and skips them when asked', async () => {
    const b = await loadTokenizerBundle(await makeRealErnieCheckpoint(files));
    const d = b.newDetokenizer({ skipSpecialTokens: false, stop: ['<|LOC_END|>'] });
    const ids = b.tokenizer.encode('<|LOC_BEGIN|><|LOC_5|><|LOC_END|>tail');
    const r = d.push(ids);
    expect(r).toMatchObject({ text: '<|LOC_BEGIN|><|LOC_5|>', stopped: { stop: '<|LOC_END|>' } });
  });
});
