// The sidecar's grammar pool for a loaded model: TokenizerInfo from the tokenizer bundle's vocabulary,
// once per model (each worker builds its own from the same pieces).
import os from 'node:os';
import type { TokenizerBundle } from '../tokenizer/index.js';
import { GrammarPool } from './pool.js';
import { grammarVocab } from './vocab.js';

/** Compiled grammars kept per worker. */
export const GRAMMAR_CACHE_SIZE = 256;

/**
 * Workers: one per four cores, one to four. Each holds its requests' matchers; a step's masks are
 * computed in parallel across workers (bench/structured.ts measures it; bench/results/structured*.json).
 */
export function defaultGrammarWorkers(cores = os.availableParallelism()): number {
  return Math.min(4, Math.max(1, Math.floor(cores / 4)));
}

export function startGrammarPool(bundle: TokenizerBundle, vocabSize: number, workers = defaultGrammarWorkers()): Promise<GrammarPool> {
  return GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, vocabSize, bundle.eosIds), workers, cacheSize: GRAMMAR_CACHE_SIZE });
}
