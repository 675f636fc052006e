// xgrammar's TokenizerInfo from the sidecar's tokenizer: the real ERNIE-4.5-0.3B side files (added and
// special tokens at their real ids 100295..101303, eos ids, 103,424-row model vocabulary) over the
// project's SentencePiece test pieces (byte fallback `<0xXX>`, `▁`). The real tokenizer.model is not
// available here (../shared/ernie-4.5-0.3b/PROVENANCE.md). xgrammar's decoded vocabulary must be
// exactly the tokenizer's token bytes, and a mask must allow exactly the tokens whose text fits.
import type { GrammarMatcher } from '@mlc-ai/web-xgrammar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grammarVocab, type GrammarVocab } from '../../../src/sidecar/grammar/vocab.js';
import { loadXgrammar, type XgrammarModule } from '../../../src/sidecar/grammar/xgrammar.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { HAS_SHARED, SHARED_SKIP_REASON, makeRealErnieCheckpoint, removeCheckpoints } from '../tokenizer/helpers.js';

const MODEL_VOCAB = 103_424;
if (!HAS_SHARED) console.warn(SHARED_SKIP_REASON);
afterAll(removeCheckpoints);

let bundle: TokenizerBundle;
let vocab: GrammarVocab;
let xg: XgrammarModule;
let info: Awaited<ReturnType<XgrammarModule['TokenizerInfo']['createTokenizerInfo']>>;
const text = new TextDecoder(); // invalid UTF-8 → U+FFFD, as xgrammar's strings reach JS

beforeAll(async () => {
  if (!HAS_SHARED) return;
  bundle = await loadTokenizerBundle(await makeRealErnieCheckpoint(['model']));
  vocab = grammarVocab(bundle.tokenizer, MODEL_VOCAB, bundle.eosIds);
  xg = loadXgrammar();
  info = await xg.TokenizerInfo.createTokenizerInfo(vocab.pieces, vocab.vocabType, false, vocab.vocabSize, vocab.stopIds);
});

/** The token ids a matcher's first mask allows. */
async function allowed(m: GrammarMatcher): Promise<number[]> {
  const bm = await m.getNextTokenBitmask();
  expect(bm.length).toBe(Math.ceil(MODEL_VOCAB / 32));
  const ids: number[] = [];
  for (let t = 0; t < MODEL_VOCAB; t++) if ((bm[t >> 5]! >>> (t & 31)) & 1) ids.push(t);
  return ids;
}

async function firstAllowed(ebnf: string): Promise<number[]> {
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  return allowed(await xg.GrammarMatcher.createGrammarMatcher(await compiler.compileGrammar(ebnf), vocab.stopIds));
}

/** Ids in the tokenizer whose output text matches `re` (special ids never: they are no text). */
function idsWhoseText(re: RegExp): number[] {
  const t = bundle.tokenizer;
  const ids: number[] = [];
  for (let id = 0; id < t.size; id++) if (!t.specialIds.has(id) && t.idToToken(id) !== null && re.test(text.decode(t.tokenBytes(id)))) ids.push(id);
  return ids;
}

describe.skipIf(!HAS_SHARED)('grammar vocabulary (real ERNIE side files)', () => {
  it('is read as byte fallback over the model vocabulary, eos ids as stops, specials as no text', () => {
    expect(vocab.vocabType).toBe('byte_fallback');
    expect(vocab.vocabSize).toBe(MODEL_VOCAB);
    expect(vocab.pieces.length).toBe(101_304);
    expect(vocab.stopIds).toEqual([2, 4]);
    expect(vocab.pieces[100_297]).toBe(''); // <|LOC_0|>
    expect(info.getVocabSize()).toBe(MODEL_VOCAB);
  });

  it("xgrammar decodes every piece to the tokenizer's own bytes (▁ → space, <0xXX> → the byte)", () => {
    // Strings cross from WebAssembly as UTF-8: pieces that are not whole UTF-8 (the bytes 0x80..0xFF)
    // cannot be compared this way; the next tests check them through masks.
    const decoded = info.getDecodedVocabHandle() as { size(): number; get(i: number): string };
    expect(decoded.size()).toBe(101_304);
    const t = bundle.tokenizer;
    const strict = new TextDecoder('utf-8', { fatal: true });
    const wrong: number[] = [];
    let partial = 0;
    for (let id = 0; id < t.size; id++) {
      let want = '';
      if (vocab.pieces[id] !== '') {
        try {
          want = strict.decode(t.tokenBytes(id));
        } catch {
          partial++;
          continue;
        }
      }
      if (decoded.get(id) !== want) wrong.push(id);
    }
    expect(wrong).toEqual([]);
    expect(partial).toBe(128);
    expect(decoded.get(t.tokenToId('<0x7B>')!)).toBe('{');
  });

  it('a byte piece stands for its byte: "é" (C3 A9) allows exactly the tokens whose bytes begin it', async () => {
    const got = await firstAllowed('root ::= "é"');
    const t = bundle.tokenizer;
    const want: number[] = [];
    for (let id = 0; id < t.size; id++) {
      const b = t.tokenBytes(id);
      if (vocab.pieces[id] !== '' && b.length > 0 && b.length <= 2 && b.every((x, i) => x === [0xc3, 0xa9][i])) want.push(id);
    }
    expect(want).toContain(t.tokenToId('<0xC3>'));
    expect(got).toEqual(want);
  });

  it("a mask allowing only '{' then letters allows exactly the tokens whose text is '{' + letters", async () => {
    const got = await firstAllowed('root ::= "{" [a-z]*');
    const want = idsWhoseText(/^\{[a-z]*$/);
    expect(want.length).toBeGreaterThan(0);
    expect(got).toEqual(want);
  });

  it("a leading space is the pieces' ▁: ' {' allows the tokens of ' ', ' {' (and no padding, special or eos id)", async () => {
    const got = await firstAllowed('root ::= " {" [a-z]*');
    const want = idsWhoseText(/^( |( \{[a-z]*))$/);
    expect(got).toEqual(want);
    expect(got.some((id) => vocab.pieces[id]!.startsWith('\u2581'))).toBe(true);
    expect(got.every((id) => id < 101_304 && id !== 2 && id !== 4)).toBe(true);
  });

  it('a complete grammar allows exactly the stop ids', async () => {
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
    const m = await xg.GrammarMatcher.createGrammarMatcher(await compiler.compileGrammar('root ::= "{}"'), [2, 4]);
    expect(m.acceptToken(bundle.tokenizer.tokenToId('<0x7B>')!)).toBe(true);
    expect(m.acceptToken(bundle.tokenizer.tokenToId('<0x7D>')!)).toBe(true);
    expect(await allowed(m)).toEqual([2, 4]);
  });
});
