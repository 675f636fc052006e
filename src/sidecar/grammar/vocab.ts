// The tokenizer's vocabulary as xgrammar's TokenizerInfo takes it: the raw pieces by id and how to read
// them. SentencePiece byte-fallback vocabularies (ERNIE-4.5, Llama 2) mark spaces with `▁` and bytes with
// `<0xXX>` pieces: xgrammar's "byte_fallback" decoding, the same as BaseTokenizer.tokenBytes. GPT-2
// style byte-level BPE (`Ġ`) is xgrammar's "byte_level". Special ids (control tokens: <s>, </s>,
// <|...|>) go in as empty pieces, which xgrammar never allows inside a grammar: their text is not
// output text. Stop ids reach the matcher separately (the request's stop ids end a complete grammar).
import type { Tokenizer } from '../tokenizer/index.js';

export type VocabType = 'byte_fallback' | 'byte_level' | 'raw';

export interface GrammarVocab {
  // By id, [0, min(tokenizer.size, vocabSize)), then '' up to the largest eos id: the ids xgrammar
  // knows (its TokenizerInfo's size). The model's ids past them (padding rows of a logits vector wider
  // than the tokenizer) are never allowed: a mask row's words past xgrammar's stay zero. Giving
  // xgrammar those padding ids instead makes it treat each as a special token and pay for them on every
  // accept and mask (with the 3,000-piece test tokenizer in a 103,424-row model, most of the row's cost).
  pieces: string[];
  vocabType: VocabType;
  vocabSize: number; // the model's (logits row length), >= pieces.length
  stopIds: number[]; // the model's eos ids: the default stop tokens of a matcher
}

const BYTE_PIECE = /^<0x[0-9A-Fa-f]{2}>$/;

export function grammarVocab(tokenizer: Tokenizer, vocabSize: number, eosIds: readonly number[]): GrammarVocab {
  const pieces: string[] = [];
  let bytePieces = 0;
  let byteLevel = 0;
  const size = Math.min(tokenizer.size, vocabSize); // ids past the model's vocabulary are never sampled
  for (let id = 0; id < size; id++) {
    const piece = tokenizer.specialIds.has(id) ? null : tokenizer.idToToken(id);
    pieces.push(piece ?? '');
    if (piece === null) continue;
    if (BYTE_PIECE.test(piece)) bytePieces++;
    else if (piece.includes('\u0120')) byteLevel++; // Ġ: byte-level BPE's space
  }
  const vocabType: VocabType = bytePieces >= 256 ? 'byte_fallback' : byteLevel > 0 ? 'byte_level' : 'raw';
  const stopIds = eosIds.filter((id) => id >= 0 && id < vocabSize);
  while (pieces.length <= Math.max(-1, ...stopIds)) pieces.push(''); // an eos id past the tokenizer's pieces
  return { pieces, vocabType, vocabSize, stopIds };
}
