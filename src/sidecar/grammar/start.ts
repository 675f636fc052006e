// The sidecar's grammar pool for a loaded model: TokenizerInfo from the tokenizer bundle's vocabulary,
// once per model (each worker builds its own from the same pieces).
import os from 'node:os';
import type { TokenizerBundle } from '../tokenizer/index.js';
import { GrammarPool } from './pool.js';
import { grammarVocab } from './vocab.js';

/** Compiled grammars kept per worker. */
export const GRAMMAR_CACHE_SIZE = 256;

/**
 * Workers. Constrained throughput scales with workers while the busiest one's rows set when a step's
 * last mask lands (bench/README.md, structured output). CUDA: every core the host gives this process
 * (os.availableParallelism: the affinity mask) but three, for the engine's step thread, the sidecar's
 * event loop, and the rest (tokenizer pool, the CUDA driver's threads, V8's GC helpers): on the H200's
 * 16 cores that is 13, which read 78.8% of the unconstrained rate against 12 workers' 71.6% in the
 * same device call (bench/results/structured-cuda-13workers.json, session 18). At most 16. CPU: one per
 * four cores, as the engine's own threads compute the forward pass on the rest.
 */
export function defaultGrammarWorkers(device: 'cpu' | 'cuda', cores = os.availableParallelism()): number {
  return device === 'cuda' ? Math.min(16, Math.max(1, cores - 3)) : Math.min(4, Math.max(1, Math.floor(cores / 4)));
}

export function startGrammarPool(bundle: TokenizerBundle, vocabSize: number, workers: number): Promise<GrammarPool> {
  return GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, vocabSize, bundle.eosIds), workers, cacheSize: GRAMMAR_CACHE_SIZE });
}
