// Ours against llama.cpp in `npm run bench:engine:cpu`, same run: one value per row kind (single-stream
// decode, prefill of 512 tokens, the article's 5 prompts at once, each wave), for each of our paths and
// each llama.cpp GGUF at each thread count, and the ratios the issue asks for.
import type { RunResult } from '../engine/batching.js';
import type { SingleStreamResult } from '../engine/single-stream.js';
import type { LlamaCpuRow, LlamaSideOutput } from './cpu-side.js';

/** One of our rows (a path at a thread count); the batched rows only at the batched thread count. */
export interface OursCpuRow {
  path: string;
  threads: number;
  single?: SingleStreamResult;
  article?: RunResult;
  waves?: { concurrency: number; result: RunResult }[];
}

/** Row kind → tok/s: `decode`, `prefill512`, `article`, `wave32`, ... (absent rows left out). */
export function rowValues(r: OursCpuRow | LlamaCpuRow): Record<string, number> {
  const v: Record<string, number> = {};
  if (r.single) Object.assign(v, { decode: r.single.decodeTokS, prefill512: r.single.prefillTokS });
  if (r.article) v.article = r.article.outputTokS;
  for (const w of r.waves ?? []) v[`wave${w.concurrency}`] = w.result.outputTokS;
  return v;
}

/** Our path compared with the llama.cpp GGUF of the same kind: bf16 weights with BF16, int8 with Q8_0. */
const PAIRS: [string, string, string][] = [
  ['bf16 precise, amx-bf16', 'bf16', 'amx-bf16/llama.cpp bf16'],
  ['bf16 precise, avx512', 'bf16', 'avx512 bf16/llama.cpp bf16'],
  ['int8, best', 'q8_0', 'int8/llama.cpp Q8_0'],
];

/**
 * Ratios ours / llama.cpp per thread count and row kind: the pairs above, and `best ours/best llama.cpp`
 * (the fastest of our paths against the fastest llama.cpp GGUF on that row: "ahead on every row").
 */
export function llamaRatios(ours: OursCpuRow[], llama: Partial<Record<string, LlamaSideOutput>>): Record<string, number> {
  const ratios: Record<string, number> = {};
  const threads = [...new Set(ours.map((r) => r.threads))];
  for (const t of threads) {
    const lRows = Object.fromEntries(Object.entries(llama).map(([w, s]) => [w, s?.rows.find((r) => r.threads === t)]));
    for (const [path, w, name] of PAIRS) {
      const o = ours.find((r) => r.path === path && r.threads === t);
      const l = lRows[w];
      if (!o || !l) continue;
      const lv = rowValues(l);
      for (const [k, x] of Object.entries(rowValues(o))) if (lv[k]) ratios[`t${t} ${name} ${k}`] = x / lv[k];
    }
    const best = (vs: Record<string, number>[]) => {
      const m: Record<string, number> = {};
      for (const v of vs) for (const [k, x] of Object.entries(v)) m[k] = Math.max(m[k] ?? 0, x);
      return m;
    };
    const bo = best(ours.filter((r) => r.threads === t).map(rowValues));
    const bl = best(Object.values(lRows).flatMap((r) => (r ? [rowValues(r)] : [])));
    for (const [k, x] of Object.entries(bo)) if (bl[k]) ratios[`t${t} best ours/best llama.cpp ${k}`] = x / bl[k];
  }
  return ratios;
}
