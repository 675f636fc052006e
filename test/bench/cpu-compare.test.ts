// bench/llama/cpu-compare.ts: the row values and the ours / llama.cpp ratios of `bench:engine:cpu`,
// on hand-built rows (only the fields the comparison reads are filled in).
import { describe, expect, it } from 'vitest';
import type { SingleStreamResult } from '../../bench/engine/single-stream.js';
import { llamaRatios, rowValues, type OursCpuRow } from '../../bench/llama/cpu-compare.js';
import type { LlamaCpuRow, LlamaSideOutput } from '../../bench/llama/cpu-side.js';
import type { LlamaRunResult } from '../../bench/llama/measure.js';

const single = (decodeTokS: number, prefillTokS: number) => ({ decodeTokS, prefillTokS }) as SingleStreamResult;
const run = (outputTokS: number) => ({ outputTokS }) as LlamaRunResult; // a RunResult too: fits both sides
const wave = (concurrency: number, tokS: number) => ({ concurrency, result: run(tokS) });
const side = (rows: LlamaCpuRow[]) => ({ rows }) as LlamaSideOutput;

describe('rowValues', () => {
  it('names each measured row by kind and leaves out the rows not measured', () => {
    expect(rowValues({ path: 'p', threads: 16, single: single(100, 2000), article: run(400), waves: [wave(64, 410), wave(32, 390)] }))
      .toEqual({ decode: 100, prefill512: 2000, article: 400, wave64: 410, wave32: 390 });
    expect(rowValues({ threads: 2, waves: [wave(64, 95)] })).toEqual({ wave64: 95 });
    expect(rowValues({ threads: 2 })).toEqual({});
  });
});

describe('llamaRatios', () => {
  const ours: OursCpuRow[] = [
    { path: 'bf16 precise, amx-bf16', threads: 16, single: single(100, 2000), waves: [wave(64, 400)] },
    { path: 'int8, best', threads: 16, single: single(270, 4700), waves: [wave(64, 700)] },
    { path: 'bf16 precise, avx512', threads: 16, single: single(110, 460) },
    { path: 'bf16 precise, amx-bf16', threads: 2, single: single(33, 770) },
  ];
  const llama = {
    bf16: side([{ threads: 16, single: single(80, 1200), waves: [wave(64, 100)] }]),
    q8_0: side([{ threads: 16, single: single(120, 3000) }]),
  };

  it('pairs bf16 paths with the BF16 GGUF and int8 with Q8_0, row by row, at the same thread count', () => {
    const r = llamaRatios(ours, llama);
    expect(r['t16 amx-bf16/llama.cpp bf16 decode']).toBeCloseTo(100 / 80);
    expect(r['t16 amx-bf16/llama.cpp bf16 prefill512']).toBeCloseTo(2000 / 1200);
    expect(r['t16 amx-bf16/llama.cpp bf16 wave64']).toBeCloseTo(4);
    expect(r['t16 avx512 bf16/llama.cpp bf16 prefill512']).toBeCloseTo(460 / 1200);
    expect(r['t16 int8/llama.cpp Q8_0 decode']).toBeCloseTo(270 / 120);
    expect(r['t16 int8/llama.cpp Q8_0 prefill512']).toBeCloseTo(4700 / 3000);
  });

  it('compares the fastest of either side per row, and gives no ratio where a side lacks the row', () => {
    const r = llamaRatios(ours, llama);
    expect(r['t16 best ours/best llama.cpp decode']).toBeCloseTo(270 / 120);
    expect(r['t16 best ours/best llama.cpp prefill512']).toBeCloseTo(4700 / 3000);
    expect(r['t16 best ours/best llama.cpp wave64']).toBeCloseTo(7);
    expect(r['t16 int8/llama.cpp Q8_0 wave64']).toBeUndefined(); // Q8_0 ran no wave
    expect(Object.keys(r).filter((k) => k.startsWith('t2 '))).toEqual([]); // llama.cpp has no 2-thread row
  });
});
