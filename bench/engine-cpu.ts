// `npm run bench:engine:cpu`: the CPU GEMM paths side by side on the ERNIE-4.5-0.3B shape (formula
// weights), same run: bf16 weights on AVX-512 (precise), on AMX-BF16 where the CPU has it, and
// --quantization int8 on the default int8 kernels (AMX hosts: AMX-INT8 from 16 rows, AVX512-VNNI below),
// and on AMX hosts on AVX512-VNNI alone and AMX-INT8 alone. `--paths 0,2` runs only those (indices).
// Rows per path: single-stream decode and prefill of 512 tokens (beside the bandwidth ceiling and
// the kernels' measured peak), and one wave of 64 streams of the random workload (the
// side-by-side's requests; --quick caps new tokens at 64), at each --threads value (comma list;
// the wave only at the largest). Output: --out FILE (default bench/results/cpu-int8.json) with
// --host naming the host kind.
// At the largest thread count each path's accuracy on the formula-0.3b golden prompts is measured too;
// then, where the bench package is installed (bench/llama/node-llama.ts), llama.cpp's Q8_0 of the same
// weights in its own process (bench/llama/q8-side.ts): accuracy and single-stream rows at each --threads
// (`--no-llama` leaves it out; `--no-wave` the 64-stream wave). The JSON records the host's load (bench/engine/host-load.ts) and is
// marked `valid: false` when other processes took a share of the cores while it ran.
import { spawnSync } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { kernelNames, loadModel } from '../src/sidecar/model/load.js';
import { native, type NativeLoadOptions } from '../src/sidecar/native.js';
import { engineAccuracy, formulaGolden, type PromptAccuracy } from './engine/accuracy.js';
import { engineRun, openBenchEngine, type RunResult } from './engine/batching.js';
import { watchHostLoad, type HostLoad } from './engine/host-load.js';
import type { LlamaSideOutput } from './llama/q8-side.js';
import { INSTALL_HINT, nodeLlamaInstalled } from './llama/node-llama.js';
import { singleStream, type SingleStreamResult } from './engine/single-stream.js';
import { sideBySideWorkload } from './engine/workload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (k: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : undefined);
const quick = process.argv.includes('--quick');
const threadsList = (arg('--threads') ?? String(os.availableParallelism())).split(',').map(Number);
const out = arg('--out') ?? path.join(here, 'results', 'cpu-int8.json');
const host = arg('--host') ?? os.cpus()[0]?.model ?? 'unknown';
const cpu = native().cpuInfo();

type Path = { name: string } & Pick<NativeLoadOptions, 'isa' | 'quantization' | 'precise'>;
const paths: Path[] = [
  { name: 'bf16 precise, avx512', isa: 'avx512', quantization: 'none', precise: true },
  ...(cpu.amx ? [{ name: 'bf16 precise, amx-bf16', isa: 'amx', quantization: 'none', precise: true } as Path] : []),
  { name: 'int8, best', isa: '', quantization: 'int8', precise: true },
  ...(cpu.amx && cpu.avx512vnni ? [{ name: 'int8, avx512vnni', isa: 'avx512', quantization: 'int8', precise: true } as Path] : []),
  ...(cpu.amx ? [{ name: 'int8, amx-int8 at every M', isa: 'amx', quantization: 'int8', precise: true } as Path] : []),
];
const only = arg('--paths');
const chosen = only ? paths.filter((_, i) => only.split(',').includes(String(i))) : paths;

interface Row {
  path: string;
  kernels: string;
  threads: number;
  single: SingleStreamResult;
  peakOpsPerS: number;
  accuracy?: PromptAccuracy[];
  wave64?: RunResult;
}

const dir = (await ensureFormulaCheckpoint()).dir;
const golden = formulaGolden(); // the formula checkpoint is the golden's weights (same config, salt 0)
const rows: Row[] = [];
const maxThreads = Math.max(...threadsList);
const load = watchHostLoad();
let llamaCpp: LlamaSideOutput | { skipped: string } | undefined;
const ratios: Record<string, number> = {};
const result = (hostLoad?: HostLoad) => ({ host, cpu, quick, loadAverage: os.loadavg(), hostLoad, valid: hostLoad?.valid, date: new Date().toISOString(), rows, llamaCpp, ratios });
for (const threads of threadsList)
  for (const p of chosen) {
    const opts = { isa: p.isa, quantization: p.quantization, precise: p.precise, threads };
    const { model } = await loadModel(dir, { ...opts, kvBlocks: 64, blockSize: 16 });
    const single = await singleStream(model, { decodeTokens: 64, prefillTokens: 512, runs: 3 });
    const peakOpsPerS = model.computePeak();
    const accuracy = threads === maxThreads ? await engineAccuracy(model, golden) : undefined;
    model.close();
    const row: Row = { path: p.name, kernels: kernelNames({ device: 'cpu', ...opts }, cpu), threads, single, peakOpsPerS, accuracy };
    if (threads === maxThreads && !process.argv.includes('--no-wave')) {
      const { engine, setSink, kvBlockBytes, nextIds } = await openBenchEngine(dir, { ...opts, kvCacheMemory: 2 * 2 ** 30 }, { maxNumSeqs: 256, maxNumBatchedTokens: 512, maxModelLen: 4096, enablePrefixCaching: false });
      row.wave64 = await engineRun(engine, setSink, sideBySideWorkload(64, quick), 64, 'random wave, 64 streams', kvBlockBytes, nextIds(64));
      await engine.close();
    }
    rows.push(row);
    await writeFile(out, JSON.stringify(result(), null, 1) + '\n'); // a partial file if cut short
    console.log(
      `${p.name.padEnd(24)} t=${threads} ${row.kernels}\n  decode ${single.decodeTokS.toFixed(1)} tok/s (ceiling ${single.ceilingTokS.toFixed(0)}), prefill 512 ${single.prefillTokS.toFixed(0)} tok/s, peak ${(peakOpsPerS / 1e12).toFixed(2)} Tops/s` +
        (row.wave64 ? `, 64-stream wave ${row.wave64.outputTokS.toFixed(1)} tok/s (TTFT p50 ${(row.wave64.ttftMs.p50 / 1000).toFixed(1)} s)` : '') +
        (accuracy ? `\n  formula-0.3b: max |Δ logit| ${accuracy.map((x) => x.maxAbsLogitDiff!.toFixed(3)).join(' / ')}, |Δ log-prob| ${accuracy.map((x) => x.maxAbsLogProbDiff.toFixed(3)).join(' / ')}, greedy ${accuracy.map((x) => `${x.greedyPrefix}/${x.steps}`).join(' ')}` : ''),
    );
  }

// llama.cpp Q8_0 on the same weights, in its own process once the engine's models are closed.
if (process.argv.includes('--no-llama')) llamaCpp = { skipped: '--no-llama' };
else if (!nodeLlamaInstalled()) llamaCpp = { skipped: `bench package not installed (${INSTALL_HINT})` };
else {
  const tmp = `${out}.llama-${process.pid}.json`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, 'llama', 'q8-side.ts'), '--out', tmp, '--threads', threadsList.join(',')], { stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    llamaCpp = JSON.parse(await readFile(tmp, 'utf8')) as LlamaSideOutput;
  } catch {
    llamaCpp = { skipped: `llama.cpp side failed (exit ${r.status})` };
  }
  await rm(tmp, { force: true });
}

// The issue's ratios, same run: int8 vs bf16 precise (AVX-512), AMX-BF16 vs AVX-512, int8 vs llama.cpp Q8_0.
const find = (name: string, t: number) => rows.find((r) => r.path === name && r.threads === t);
for (const t of threadsList) {
  const base = find('bf16 precise, avx512', t), i8 = find('int8, best', t), amx = find('bf16 precise, amx-bf16', t);
  if (base && i8) ratios[`t${t} int8/bf16 decode`] = i8.single.decodeTokS / base.single.decodeTokS;
  if (base && i8) ratios[`t${t} int8/bf16 prefill512`] = i8.single.prefillTokS / base.single.prefillTokS;
  if (base?.wave64 && i8?.wave64) ratios[`t${t} int8/bf16 wave64`] = i8.wave64.outputTokS / base.wave64.outputTokS;
  if (base && amx) ratios[`t${t} amx-bf16/avx512 prefill512`] = amx.single.prefillTokS / base.single.prefillTokS;
  if (base?.wave64 && amx?.wave64) ratios[`t${t} amx-bf16/avx512 wave64`] = amx.wave64.outputTokS / base.wave64.outputTokS;
  if (base && amx) ratios[`t${t} amx-bf16/avx512 decode`] = amx.single.decodeTokS / base.single.decodeTokS;
  const q8 = llamaCpp && 'rows' in llamaCpp ? llamaCpp.rows.find((r) => r.threads === t) : undefined;
  if (i8 && q8) ratios[`t${t} int8/llama.cpp Q8_0 decode`] = i8.single.decodeTokS / q8.single.decodeTokS;
  if (i8 && q8) ratios[`t${t} int8/llama.cpp Q8_0 prefill512`] = i8.single.prefillTokS / q8.single.prefillTokS;
}
const hostLoad = load.stop();
if (!hostLoad.valid) console.log(`NOT VALID: ${hostLoad.reason}`);
for (const [k, v] of Object.entries(ratios)) console.log(`${k}: ${v.toFixed(2)}x`);
await writeFile(out, JSON.stringify(result(hostLoad), null, 1) + '\n');
console.log(`wrote ${out}`);
