// Encoding and decoding against the reference implementations (sentencepiece 0.2.2 → cases[];
// HF tokenizers → hf_fast[]), and the loader's choice of file.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { GOLDEN_FILES, golden, makeCheckpoint, removeCheckpoints } from './helpers.js';

afterAll(removeCheckpoints);

let sp: TokenizerBundle;
let hf: TokenizerBundle;
let bothDir: string;

beforeAll(async () => {
  bothDir = await makeCheckpoint({ 'tokenizer.model': GOLDEN_FILES.model, 'tokenizer.json': GOLDEN_FILES.json, 'tokenizer_config.json': GOLDEN_FILES.config });
  sp = await loadTokenizerBundle(bothDir, { prefer: 'sentencepiece' });
  hf = await loadTokenizerBundle(bothDir);
});

describe('loader', () => {
  it('prefers tokenizer.json when both exist and says so', () => {
    expect(hf.tokenizer.kind).toBe('hf-json');
    expect(hf.source).toContain('picked tokenizer.json');
    expect(sp.tokenizer.kind).toBe('sentencepiece');
    expect(sp.source).toContain('picked tokenizer.model');
    expect(sp.source).toMatch(/bpe, 3000 pieces/);
  });

  it('takes whichever file a directory has', async () => {
    const onlyModel = await loadTokenizerBundle(await makeCheckpoint({ 'tokenizer.model': GOLDEN_FILES.model }), { prefer: 'json' });
    expect(onlyModel.tokenizer.kind).toBe('sentencepiece');
    const onlyJson = await loadTokenizerBundle(await makeCheckpoint({ 'tokenizer.json': GOLDEN_FILES.json }), { prefer: 'sentencepiece' });
    expect(onlyJson.tokenizer.kind).toBe('hf-json');
    await expect(loadTokenizerBundle(await makeCheckpoint({}))).rejects.toThrow(/no tokenizer.json or tokenizer.model/);
  });

  it('knows the special ids, bos/eos and eos set of the test vocabulary', () => {
    for (const b of [sp, hf]) {
      const t = b.tokenizer;
      expect(t.size).toBe(3000);
      expect(t.bosId).toBe(1);
      expect(t.eosId).toBe(2);
      expect([...t.specialIds].sort((a, c) => a - c)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
      expect(b.eosIds).toEqual([2, 4]);
      expect(t.tokenToId('<|end_of_sentence|>')).toBe(4);
      expect(t.idToToken(2320)).toBe('\u2581');
    }
  });
});

describe.each([
  ['sentencepiece (cases[])', () => sp, golden.cases],
  ['hf-json (hf_fast[])', () => hf, golden.hf_fast],
] as const)('%s', (_name, bundle, cases) => {
  it.each(cases.map((c, i) => [i, JSON.stringify(c.text).slice(0, 40), c] as const))('case %i %s: encode == reference ids', (_i, _t, c) => {
    expect(bundle().tokenizer.encode(c.text)).toEqual(c.ids);
  });

  it.each(cases.map((c, i) => [i, c] as const))('case %i: decode(reference ids) == reference text, and round-trips', (_i, c) => {
    const t = bundle().tokenizer;
    expect(t.decode(c.ids)).toBe(c.decoded);
    expect(t.decode(t.encode(c.text))).toBe(c.text);
  });
});

describe('where the two references differ', () => {
  const last = golden.cases[golden.cases.length - 1]!;
  it('sentencepiece does not parse <unk>/<s> in text (CONTROL/UNKNOWN), only user-defined symbols', () => {
    expect(last.text).toContain('<unk>');
    const ids = sp.tokenizer.encode(last.text);
    expect(ids).toEqual(last.ids);
    expect(ids.map((id) => sp.tokenizer.idToToken(id))).toEqual(last.pieces);
  });
  it('HF parses them as special tokens', () => {
    const ids = hf.tokenizer.encode(last.text);
    expect(ids).toContain(0);
    expect(ids).toContain(1);
  });
  it('pieces match sentencepiece for every case', () => {
    for (const c of golden.cases) expect(c.ids.map((id) => sp.tokenizer.idToToken(id))).toEqual(c.pieces);
  });
  it('sentencepiece decodes CONTROL ids to nothing and <unk> to " ⁇ "; HF to their text', () => {
    expect(sp.tokenizer.decode([1, 2327, 2])).toBe('a');
    expect(sp.tokenizer.decode([0])).toBe(' \u2047 ');
    expect(hf.tokenizer.decode([1, 2327, 2])).toBe('<s>a</s>');
    expect(hf.tokenizer.decode([1, 2327, 2], { skipSpecialTokens: true })).toBe('a');
  });
});

describe('parseSpecial: false (untrusted text)', () => {
  it.each([['sp', () => sp], ['hf', () => hf]] as const)('%s: markers typed as text stay text', (_n, b) => {
    const t = b().tokenizer;
    const text = '<|begin_of_sentence|>User: hi<|end_of_sentence|><mask:1><s>';
    const ids = t.encode(text, { parseSpecial: false });
    for (const id of ids) expect(t.specialIds.has(id)).toBe(false);
    expect(t.decode(ids)).toBe(text);
    expect(t.encode(text)).toContain(3); // and parsed when trusted
  });
  it('addBos prepends the bos id', () => {
    expect(sp.tokenizer.encode('a', { addBos: true })).toEqual([1, 2327]);
    expect(hf.tokenizer.encode('a', { addBos: true })).toEqual([1, 2327]);
  });
});
