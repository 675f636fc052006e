// `node --import tsx bench/serve-gpu.ts OUT [--device cuda|cpu] [--levels …] [--prompts …] [--input-len …]
// [--output-len …] [--precisions …]` (bench/serve-gpu.sh runs it on the GPU machine): issue #23's proof.
// For each precision, the same requests (random token-id prompts, ignore_eos, greedy sampled on the
// device, no logprobs; token arrivals counted by return_token_ids) at
// each concurrency, first through the engine in this process, then through HTTP — `ernie-edge bench
// serve` against `ernie-edge serve` with the same engine options — streamed and not. Writes
// OUT/serve-gpu.json (per precision and concurrency: both sides' output tok/s, TTFT, ITL p50, and
// httpOverEngine, their ratio), OUT/serve-gpu.svg, and bench serve's own JSON/SVG per run.
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderChart } from '../src/cli/bench-serve/plot.js';
import { ensureDefaultModelDir } from '../src/sidecar/model/default-bundle.js';
import { startServer } from './serve/http.js';
import { serveGpuOptions, workloadFlags, type ServeGpuOptions } from './serve-gpu/options.js';
import { benchServeSide, engineSide, httpFigures, serverFlags, sharedWorkload, type SideFigures } from './serve-gpu/sides.js';
import { chartOf, targetsMet, type PrecisionResult } from './serve-gpu/summary.js';

/**
 * One more streamed run at o.profileLevel with the gateway processes and the sidecar profiled as
 * `node --cpu-prof` would (./serve-gpu/cpu-profile.mjs: OUT/prof/*.cpuprofile, written as each
 * exits), then each profile's top self times (bench/serve-path/profile-top.ts) into OUT/prof/top.txt.
 * Not measured: profiling slows them.
 */
async function profiledRun(modelDir: string, o: ServeGpuOptions, precision: string): Promise<void> {
  const dir = path.join(o.outDir, 'prof');
  await mkdir(dir, { recursive: true });
  const server = await startServer(modelDir, null, serverFlags(o, precision), {
    NODE_OPTIONS: `--import ${fileURLToPath(new URL('./serve-gpu/cpu-profile.mjs', import.meta.url))}`,
    ERNIE_CPU_PROFILE_DIR: dir,
  });
  try {
    const level = o.profileLevel!;
    await benchServeSide(server.base, o, `http-${precision}-stream-profiled`, true, path.join(o.outDir, `bench-serve-${precision}-profiled.log`), { level, prompts: 2 * level });
  } finally {
    await server.stop();
  }
  const top = fileURLToPath(new URL('./serve-path/profile-top.ts', import.meta.url));
  let text = '';
  for (const f of (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'))) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', top, path.join(dir, f), '40'], { encoding: 'utf8' });
    text += `${r.stdout}${r.stderr}\n`;
  }
  await writeFile(path.join(dir, 'top.txt'), text);
  console.log(`[${precision}] profiled run at ${o.profileLevel} streams: ${dir}/top.txt`);
}

async function main(): Promise<void> {
  const o = serveGpuOptions(process.argv.slice(2));
  await mkdir(o.outDir, { recursive: true });
  // The placeholder `serve` loads when given no --model: the same directory, weights and tokenizer.
  const { dir } = await ensureDefaultModelDir({ weights: true });
  const work = await sharedWorkload(o);
  const t0 = performance.now();
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(0)} s`;
  const results: Record<string, PrecisionResult> = {};
  const write = async () => {
    const out = {
      date: new Date().toISOString(),
      command: `bash bench/serve-gpu.sh OUT ${process.argv.slice(3).join(' ')}`.trim(),
      device: o.device,
      host: { cpus: os.availableParallelism(), cpuModel: os.cpus()[0]?.model ?? '', node: process.version },
      workload: {
        note: 'the same requests both sides: random token-id prompts to /v1/completions, ignore_eos, greedy sampled on the device (no logprobs), return_token_ids so that a chunk whose text is held back still counts as a token arrival; each level on fresh prompts; prefix caching off on both sides; engine: closed loop in-process (bench/engine/batching.ts engineRun); HTTP: `ernie-edge bench serve` as its own process, closed loop through --max-concurrency',
        benchServeFlags: workloadFlags(o).join(' '),
        serverFlags: Object.fromEntries(o.precisions.map((p) => [p, serverFlags(o, p).join(' ')])),
        levels: o.levels,
        prompts: o.prompts,
      },
      /** Precisions not yet run are absent (the file is rewritten after each, so a cut run keeps what it did). */
      precisions: results,
      targets: { httpOverEngineStreamAt256And512: 0.9, ttftP50OverEngineMsAtC1: 2, itlP50OverEngineAt256: 1.1 },
      meets: targetsMet(results),
    };
    await writeFile(path.join(o.outDir, 'serve-gpu.json'), JSON.stringify(out, null, 2) + '\n');
    await writeFile(path.join(o.outDir, 'serve-gpu.svg'), renderChart(chartOf(out.date, o.device, o.levels, results)));
    return out;
  };
  for (const precision of o.precisions) {
    const engine = await engineSide(dir, o, precision, work);
    console.log(`[${precision}] engine done (${elapsed()})`);
    const server = await startServer(dir, null, serverFlags(o, precision));
    console.log(`[${precision}] server ready after ${((server.readyAt - server.spawnedAt) / 1000).toFixed(1)} s`);
    let stream, whole;
    try {
      stream = await benchServeSide(server.base, o, `http-${precision}-stream`, true, path.join(o.outDir, `bench-serve-${precision}-stream.log`));
      whole = await benchServeSide(server.base, o, `http-${precision}-no-stream`, false, path.join(o.outDir, `bench-serve-${precision}-no-stream.log`));
    } finally {
      await server.stop();
    }
    console.log(`[${precision}] HTTP done (${elapsed()})`);
    const ratio = (h: SideFigures, e: SideFigures) => h.outputTokS / e.outputTokS;
    results[precision] = {
      levels: o.levels.map((c, k) => {
        const e = engine[k]!;
        const s = httpFigures(stream.levels[k]!);
        const w = httpFigures(whole.levels[k]!);
        return {
          concurrency: c,
          requests: o.prompts[k]!,
          engine: e,
          http: { stream: s, noStream: w },
          httpOverEngine: { stream: ratio(s, e), noStream: ratio(w, e) },
          ttftP50OverEngineMs: s.ttftP50Ms !== null && e.ttftP50Ms !== null ? s.ttftP50Ms - e.ttftP50Ms : null,
          itlP50OverEngine: s.itlP50Ms !== null && e.itlP50Ms ? s.itlP50Ms / e.itlP50Ms : null,
        };
      }),
    };
    for (const l of results[precision].levels) {
      const f = (x: number | null, d = 1) => (x === null ? '-' : x.toFixed(d));
      console.log(
        `  c=${String(l.concurrency).padEnd(4)} engine ${f(l.engine.outputTokS, 0).padStart(8)} tok/s TTFT p50 ${f(l.engine.ttftP50Ms)} ms ITL p50 ${f(l.engine.itlP50Ms, 2)} ms | ` +
          `HTTP stream ${f(l.http.stream.outputTokS, 0).padStart(8)} (${(100 * l.httpOverEngine.stream).toFixed(1)}%) TTFT p50 ${f(l.http.stream.ttftP50Ms)} ms ITL p50 ${f(l.http.stream.itlP50Ms, 2)} ms | ` +
          `whole ${f(l.http.noStream.outputTokS, 0).padStart(8)} (${(100 * l.httpOverEngine.noStream).toFixed(1)}%) | client ${l.http.stream.clientThreads} thr ${f(l.http.stream.clientCpuCores, 2)} cores ${f(l.http.stream.clientCpuUsPerToken, 2)} µs/tok${l.http.stream.clientSaturated ? ' SATURATED' : ''}`,
      );
    }
    await write();
  }
  const out = await write();
  // Last, so that a cut run keeps every measured figure.
  if (o.profileLevel !== null) await profiledRun(dir, o, o.precisions[0]!);
  console.log(`wrote ${path.join(o.outDir, 'serve-gpu.json')} and serve-gpu.svg (${elapsed()}); targets met: ${JSON.stringify(out.meets)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
