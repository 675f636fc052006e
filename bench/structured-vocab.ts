// `bench:structured --vocab full`: the default model with its tokenizer grown to the model's whole
// vocabulary. The embedded test tokenizer has 3,000 pieces and the model 103,424 rows; a grammar's mask
// cost grows with the pieces it must classify, so a benchmark on 3,000 pieces would flatter it. The real
// ERNIE tokenizer is not available here, so the extra pieces are synthetic, drawn with a fixed seed to
// resemble a bilingual SentencePiece vocabulary: CJK runs, Latin subwords (half with the `▁` space),
// numbers, and punctuation runs (with `"`, `\`, braces and brackets, which a JSON grammar must look into).
// The pieces only enter the model's vocabulary (no merges produce them), so prompts tokenize as before;
// sampled ids decode through them.
import { mkdir, readdir, readFile, symlink, writeFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { rng } from '../src/cli/bench-serve/rng.js';
import { grammarVocab } from '../src/sidecar/grammar/vocab.js';
import { loadXgrammar } from '../src/sidecar/grammar/xgrammar.js';
import { readCheckpoint } from '../src/sidecar/model/checkpoint.js';
import { ensureDefaultModelDir } from '../src/sidecar/model/default-bundle.js';
import { loadTokenizerBundle } from '../src/sidecar/tokenizer/index.js';

const PUNCT = ['"', '\\', '{', '}', '[', ']', ':', ',', '.', '!', '?', '(', ')', '-', '_', '/', "'", '*', '#', '=', ' '];

function piece(next: () => number): string {
  const kind = next();
  const len = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  let s = '';
  if (kind < 0.45) {
    for (let i = len(1, 3); i > 0; i--) s += String.fromCodePoint(0x4e00 + Math.floor(next() * 0x5000));
  } else if (kind < 0.85) {
    if (next() < 0.5) s += '\u2581';
    for (let i = len(2, 9); i > 0; i--) s += String.fromCharCode((next() < 0.1 ? 65 : 97) + Math.floor(next() * 26));
  } else if (kind < 0.93) {
    if (next() < 0.3) s += '\u2581';
    for (let i = len(1, 4); i > 0; i--) s += String(Math.floor(next() * 10));
  } else {
    if (next() < 0.3) s += '\u2581';
    for (let i = len(1, 3); i > 0; i--) s += PUNCT[Math.floor(next() * PUNCT.length)]!;
  }
  return s;
}

/** A copy of `dir` (links to its files) whose tokenizer.json holds `vocabSize` pieces. */
export async function fullVocabDir(dir: string, vocabSize: number): Promise<string> {
  const out = `${dir}-vocab${vocabSize}`;
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  for (const name of await readdir(dir))
    if (name !== 'tokenizer.json' && name !== 'tokenizer.model') await symlink(path.join(dir, name), path.join(out, name));
  const tok = JSON.parse(await readFile(path.join(dir, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
  const vocab = tok.model.vocab;
  let id = Math.max(...Object.values(vocab)) + 1;
  const next = rng(0x0e41e);
  while (id < vocabSize) {
    const p = piece(next);
    if (!(p in vocab)) vocab[p] = id++;
  }
  await writeFile(path.join(out, 'tokenizer.json'), JSON.stringify(tok));
  return out;
}

/**
 * What the grammar microbenchmarks (grammar-mask.ts, grammar-rows.ts) start from: the default model's
 * tokenizer (`full`: padded to its real vocabulary by fullVocabDir; `test`: the small test tokenizer),
 * its vocabulary as xgrammar takes it, and an xgrammar compiler over it.
 */
export async function grammarBenchSetup(vocabKind: string) {
  const { dir: baseDir } = await ensureDefaultModelDir({ weights: true });
  const dir = vocabKind === 'full' ? await fullVocabDir(baseDir, (await readCheckpoint(baseDir)).config.native.vocabSize) : baseDir;
  const bundle = await loadTokenizerBundle(dir);
  const vocabSize = (await readCheckpoint(dir)).config.native.vocabSize;
  const vocab = grammarVocab(bundle.tokenizer, vocabSize, bundle.eosIds);
  const xg = loadXgrammar();
  const info = await xg.TokenizerInfo.createTokenizerInfo(vocab.pieces, vocab.vocabType, false, vocab.pieces.length, vocab.stopIds);
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  return { bundle, vocabSize, vocab, xg, info, compiler };
}
