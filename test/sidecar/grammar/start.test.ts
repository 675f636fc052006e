// The grammar pool's default size (src/sidecar/grammar/start.ts): on CUDA every core but three, at
// least one, at most 16; on the CPU one per four cores, at most four.
import { describe, expect, it } from 'vitest';
import { defaultGrammarWorkers } from '../../../src/sidecar/grammar/start.js';

describe('defaultGrammarWorkers', () => {
  it('CUDA: cores - 3 (the step thread, the event loop, the rest), within 1..16', () => {
    expect([1, 2, 4, 8, 16, 32, 128].map((c) => defaultGrammarWorkers('cuda', c))).toEqual([1, 1, 1, 5, 13, 16, 16]);
  });
  it('CPU: a quarter of the cores, within 1..4', () => {
    expect([1, 2, 4, 8, 16, 32].map((c) => defaultGrammarWorkers('cpu', c))).toEqual([1, 1, 1, 2, 4, 4]);
  });
});
