// `npm run bench:engine`: the engine on the ERNIE-4.5-0.3B shape (formula weights), results in
// bench/results/engine.json. Sections: single-stream decode/prefill against the memory ceiling.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { loadModel } from '../src/sidecar/model/load.js';
import { native } from '../src/sidecar/native.js';
import { singleStream } from './engine/single-stream.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const f1 = (x: number) => x.toFixed(1);

async function main(): Promise<void> {
  const { dir } = await ensureFormulaCheckpoint(undefined, {
    onProgress: (d, t) => process.stderr.write(`\rgenerating formula weights ${((100 * d) / t).toFixed(0)}%`),
  });
  process.stderr.write('\n');
  const cpu = native().cpuInfo();
  const { model } = await loadModel(dir, { kvBlocks: 256, blockSize: 16 });
  const info = model.info();
  console.log(`engine: ${info.isa}, ${info.threads} threads, weights ${(info.weightBytes / 1e6).toFixed(0)} MB (bf16)`);
  const single = await singleStream(model, { decodeTokens: 128, prefillTokens: 512, runs: 3 });
  model.close();

  const targets = { decodeFractionOfCeiling: 0.85, decodeTokS: 27, prefillTokS: 500 };
  const llamaCppFromIssue = { decodeTokS: 20, prefillTokS: 190, note: 'llama.cpp BF16 GGUF, 2 threads, as measured on this machine (issue text)' };
  console.log('\nsingle stream (0.3B shape, formula weights)');
  console.log(`  read bandwidth        ${f1(single.readBandwidthGBs)} GB/s (engine thread pool, same run)`);
  console.log(`  memory-bound ceiling  ${f1(single.ceilingTokS)} tok/s (${(single.weightBytesPerToken / 1e6).toFixed(0)} MB per token)`);
  console.log(`  decode                ${f1(single.decodeTokS)} tok/s = ${(100 * single.decodeFractionOfCeiling).toFixed(0)}% of ceiling (${single.decodeMsPerToken.toFixed(1)} ms/token); target ${targets.decodeTokS} tok/s / ${targets.decodeFractionOfCeiling * 100}%`);
  console.log(`  prefill (512 tokens)  ${f1(single.prefillTokS)} tok/s; target ${targets.prefillTokS}`);
  console.log(`  vs llama.cpp (issue)  decode x${(single.decodeTokS / llamaCppFromIssue.decodeTokS).toFixed(2)}, prefill x${(single.prefillTokS / llamaCppFromIssue.prefillTokS).toFixed(2)}`);

  const out = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus()[0]?.model, cores: cpu.cores, isa: info.isa, threads: info.threads },
    singleStream: single,
    targets,
    llamaCppFromIssue,
  };
  await mkdir(path.join(here, 'results'), { recursive: true });
  await writeFile(path.join(here, 'results', 'engine.json'), JSON.stringify(out, null, 2) + '\n');
  console.log(`\nwrote bench/results/engine.json`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
