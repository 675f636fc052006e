// `node --import tsx bench/prefill-cpu.ts`: a prefill of --tokens (512) on the precise bf16 path
// (AVX-512) and on --quantization int8 (its default kernels and planes), both models loaded in this
// process and run interleaved (bf16, int8, bf16, int8, ...; --reps each), timed by the process's CPU
// time (user + system, every pool thread) as well as wall time: on a shared host, where other work
// takes the cores at times, the CPU time of the same work stays close to the machine's while wall
// time does not. The wave at 64 streams is prefill-bound, so the CPU-time ratio of the two prefills
// is the figure the wave's ratio follows. With each: the runner's time by phase (wall ms, mean of
// the reps: the GEMMs by matrix group, attention, activation preparation, the rest).
// `--only int8` (or `--only bf16`): that side alone (e.g. under perf record).
// Output: --out FILE (default bench/results/prefill-cpu.json), with the host's load and steal share.
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { kernelNames, loadModel } from '../src/sidecar/model/load.js';
import { native, type CpuProfile, type NativeLoadOptions, type NativeModel } from '../src/sidecar/native.js';
import { watchHostLoad } from './engine/host-load.js';
import { tokens } from './engine/single-stream.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (k: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : undefined);
const threads = Number(arg('--threads') ?? 2);
const reps = Number(arg('--reps') ?? 5);
const n = Number(arg('--tokens') ?? 512);
const out = arg('--out') ?? path.join(here, 'results', 'prefill-cpu.json');
const host = arg('--host') ?? os.cpus()[0]?.model ?? 'unknown';
const cpu = native().cpuInfo();

type Side = { name: string; opts: Pick<NativeLoadOptions, 'isa' | 'quantization' | 'precise'>; model?: NativeModel; cpuMs: number[]; wallMs: number[]; phases: Record<string, number> };
const only = arg('--only');
const sides = ([
  { name: 'bf16 precise, avx512', opts: { isa: 'avx512', quantization: 'none', precise: true }, cpuMs: [], wallMs: [], phases: {} },
  { name: 'int8, best', opts: { isa: '', quantization: 'int8', precise: true }, cpuMs: [], wallMs: [], phases: {} },
] as Side[]).filter((s) => !only || (only === 'int8') === (s.opts.quantization === 'int8'));
const dir = (await ensureFormulaCheckpoint()).dir;
const blocks = Int32Array.from({ length: Math.ceil(n / 16) + 1 }, (_, i) => i);
for (const s of sides) {
  s.model = (await loadModel(dir, { ...s.opts, threads, kvBlocks: blocks.length, blockSize: 16 })).model;
  await s.model.forward([{ tokens: tokens(n, 1), startPos: 0, blockTable: blocks, logits: 1 }]); // first touch
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = watchHostLoad();
for (let r = 0; r < reps; r++)
  for (const s of sides) {
    const before = s.model!.info().profile as CpuProfile;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await s.model!.forward([{ tokens: tokens(n, 20 + r), startPos: 0, blockTable: blocks, logits: 1 }]);
    s.wallMs.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    s.cpuMs.push((c.user + c.system) / 1000);
    const after = s.model!.info().profile as CpuProfile;
    for (const k of Object.keys(after) as (keyof CpuProfile)[])
      if (k !== 'steps' && k !== 'tokens' && k !== 'threads') s.phases[k] = (s.phases[k] ?? 0) + (after[k] - before[k]) / reps;
  }
const hostLoad = load.stop();
const rows = sides.map((s) => {
  s.model!.close();
  return {
    path: s.name, kernels: kernelNames({ device: 'cpu', ...s.opts }, cpu), threads, tokens: n,
    cpuMsMedian: median(s.cpuMs), wallMsMedian: median(s.wallMs), cpuMs: s.cpuMs, wallMs: s.wallMs,
    phasesWallMs: Object.fromEntries(Object.entries(s.phases).map(([k, v]) => [k, Math.round(v * 10) / 10])),
  };
});
const ratios = rows.length === 2 ? { cpuTime: rows[0]!.cpuMsMedian / rows[1]!.cpuMsMedian, wallTime: rows[0]!.wallMsMedian / rows[1]!.wallMsMedian } : undefined;
for (const r of rows) console.log(`${r.path.padEnd(22)} prefill ${n}: CPU ${r.cpuMsMedian.toFixed(0)} ms (median of ${reps}), wall ${r.wallMsMedian.toFixed(0)} ms`);
if (ratios) console.log(`int8 / precise bf16, prefill ${n}: CPU time ${ratios.cpuTime.toFixed(2)}x, wall ${ratios.wallTime.toFixed(2)}x`);
console.log(`other processes ${(hostLoad.othersShare * 100).toFixed(1)}% of the cores' time, hypervisor steal ${(hostLoad.stealShare * 100).toFixed(1)}%`);
await writeFile(out, JSON.stringify({ host, cpu, date: new Date().toISOString(), timing: `interleaved, ${reps} reps each, process CPU time and wall`, hostLoad, rows, ratios }, null, 1) + '\n');
console.log(`wrote ${out}`);
