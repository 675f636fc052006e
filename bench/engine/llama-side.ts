// The llama.cpp side-by-side of `npm run bench:engine` (issue #3): the same weights (as a BF16 GGUF),
// the same thread count and the same requests through llama.cpp (node-llama-cpp, from the bench
// package) and through the engine, with ratios ours / llama.cpp. llama.cpp runs in a child process
// (bench/llama/main.ts) after the engine is closed, so neither side's threads or memory overlap.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeEngine, StepOutput } from '../../src/sidecar/engine/native-engine.js';
import type { LlamaBenchOutput } from '../llama/main.js';
import { INSTALL_HINT, nodeLlamaInstalled } from '../llama/node-llama.js';
import { engineRun, type RunResult } from './batching.js';
import { sideBySideWorkload } from './workload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SIDE_BY_SIDE_LEVELS = [8, 32, 64];

export interface OursSide {
  decodeTokS: number;
  prefillTokS: number;
  article: RunResult;
  levels: { concurrency: number; result: RunResult }[];
}

/** The engine on the side-by-side waves (one wave of c requests at concurrency c, each level). */
export async function oursLevels(
  engine: NativeEngine, setSink: (f: (o: StepOutput[]) => void) => void, kvBlockBytes: number, nextIds: (n: number) => number, quick: boolean,
): Promise<OursSide['levels']> {
  const out: OursSide['levels'] = [];
  for (const c of SIDE_BY_SIDE_LEVELS)
    out.push({ concurrency: c, result: await engineRun(engine, setSink, sideBySideWorkload(c, quick), c, `engine c=${c} (${c} req)`, kvBlockBytes, nextIds(c)) });
  return out;
}

/** Runs bench/llama/main.ts; null (after one line saying how to install) when node-llama-cpp is absent. */
export async function runLlamaSide(threads: number, quick: boolean): Promise<LlamaBenchOutput | null> {
  if (!nodeLlamaInstalled()) {
    console.log(`\nllama.cpp side-by-side skipped: node-llama-cpp is not installed (install: ${INSTALL_HINT})`);
    return null;
  }
  const out = path.join(os.tmpdir(), `ernie-edge-llama-${process.pid}.json`);
  const args = [...process.execArgv, path.join(here, '../llama/main.ts'), '--out', out, '--threads', String(threads), '--levels', SIDE_BY_SIDE_LEVELS.join(',')];
  const child = spawn(process.execPath, quick ? [...args, '--quick'] : args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`bench/llama/main.ts exited with ${code}`);
  try {
    return JSON.parse(await readFile(out, 'utf8')) as LlamaBenchOutput;
  } finally {
    await rm(out, { force: true });
  }
}

export interface ComparisonRow {
  what: string;
  ours: number; // output tok/s (decode / prefill rows: tok/s of that phase)
  llama: number;
  ratio: number; // ours / llama
  ttftP50Ms?: { ours: number; llama: number };
  itlP50Ms?: { ours: number; llama: number };
  peakRssBytes?: { ours: number | null; llama: number };
}

/** Rows ours vs llama.cpp, printed and returned for the JSON. */
export function compare(ours: OursSide, llama: LlamaBenchOutput): ComparisonRow[] {
  const run = (what: string, o: RunResult, l: LlamaBenchOutput['article']): ComparisonRow => ({
    what, ours: o.outputTokS, llama: l.outputTokS, ratio: o.outputTokS / l.outputTokS,
    ttftP50Ms: { ours: o.ttftMs.p50, llama: l.ttftMs.p50 }, itlP50Ms: { ours: o.itlMs.p50, llama: l.itlMs.p50 },
    peakRssBytes: { ours: o.peakRssBytes ?? null, llama: l.peakRssBytes },
  });
  const rows: ComparisonRow[] = [
    { what: 'single-stream decode', ours: ours.decodeTokS, llama: llama.singleStream.decodeTokS, ratio: ours.decodeTokS / llama.singleStream.decodeTokS },
    { what: 'prefill, 512-token prompt', ours: ours.prefillTokS, llama: llama.singleStream.prefillTokS, ratio: ours.prefillTokS / llama.singleStream.prefillTokS },
    run("article's 5 prompts at once", ours.article, llama.article),
  ];
  for (const { concurrency: c, result } of ours.levels) {
    const l = llama.levels.find((x) => x.concurrency === c);
    if (l) rows.push(run(`random wave, ${c} streams`, result, l.result));
  }
  // llama.cpp's best batched throughput on any of its runs, against ours at the highest concurrency.
  const best = [llama.article, ...llama.levels.map((x) => x.result)].reduce((a, b) => (b.outputTokS > a.outputTokS ? b : a));
  const top = ours.levels.at(-1);
  if (top) rows.push({ what: `ours at ${top.concurrency} streams vs llama.cpp's best (${best.label})`, ours: top.result.outputTokS, llama: best.outputTokS, ratio: top.result.outputTokS / best.outputTokS });

  const g = llama.greedy;
  const margins = g.prompts.flatMap((p) => p.teacherForcedMismatchMargins);
  console.log(`\nllama.cpp side by side (node-llama-cpp ${llama.nodeLlamaCpp}, CPU, ${llama.threads} threads, BF16 GGUF of the same weights)`);
  console.log(`  greedy tokens vs the reference: ${g.freeRunMatch}/${g.steps} free-running, ${g.teacherForcedMatch}/${g.steps} teacher-forced` +
    (margins.length ? ` (mismatches at top-2 margins ${margins.map((m) => m.toFixed(3)).join(', ')})` : ''));
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  const mib = (x: number | null | undefined) => (x == null ? '-' : `${(x / 2 ** 20).toFixed(0)}`);
  for (const r of rows) {
    const lat = r.ttftP50Ms && r.itlP50Ms
      ? `  TTFT p50 ${f(r.ttftP50Ms.ours)}/${f(r.ttftP50Ms.llama)} ms  ITL p50 ${f(r.itlP50Ms.ours)}/${f(r.itlP50Ms.llama)} ms  RSS ${mib(r.peakRssBytes?.ours)}/${mib(r.peakRssBytes?.llama)} MiB`
      : '';
    console.log(`  ${r.what.padEnd(30)} ${f(r.ours).padStart(6)} / ${f(r.llama).padStart(5)} tok/s  x${r.ratio.toFixed(1)}${lat}`);
  }
  const batching = llama.levels.map((x) => `${x.concurrency}: ${x.result.tokensPerDecode?.toFixed(1) ?? '?'}`).join(', ');
  console.log(`  (ours / llama.cpp; llama.cpp tokens per llama_decode by concurrency: ${batching})`);
  return rows;
}
