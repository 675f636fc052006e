// The sidecar's grammar pool for a loaded model: TokenizerInfo from the tokenizer bundle's vocabulary,
// once per model (each worker builds its own from the same pieces).
import os from 'node:os';
import type { TokenizerBundle } from '../tokenizer/index.js';
import { GrammarPool } from './pool.js';
import { grammarVocab } from './vocab.js';

/** Compiled grammars kept per worker. */
export const GRAMMAR_CACHE_SIZE = 256;

/**
 * Workers. A mask costs xgrammar's WebAssembly build about as much CPU time as a GPU decode step of
 * the whole batch (bench/results/structured-cuda.json): constrained throughput scales with workers.
 * CUDA: every core but a few (the step thread, the event loop, the tokenizer pool); CPU: one per four
 * cores, as the engine's own threads compute the forward pass on the rest.
 */
export function defaultGrammarWorkers(device: 'cpu' | 'cuda', cores = os.availableParallelism()): number {
  return device === 'cuda' ? Math.min(16, Math.max(1, cores - 4)) : Math.min(4, Math.max(1, Math.floor(cores / 4)));
}

export function startGrammarPool(bundle: TokenizerBundle, vocabSize: number, workers: number): Promise<GrammarPool> {
  return GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, vocabSize, bundle.eosIds), workers, cacheSize: GRAMMAR_CACHE_SIZE });
}
