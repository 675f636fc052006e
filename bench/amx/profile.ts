// The AMX-BF16 path's 512-token prefill and single-stream decode, by phase (model.info().profile): per
// prefill, each phase's wall time, the GEMMs' and attention's thread time in tasks against their wall
// time x threads (the rest idle or dispatching); decode tok/s over 64 tokens. One JSON line per run.
// Usage: node --import tsx bench/amx/profile.ts [--threads 16] [--isa amx] [--runs 5] [--label TEXT]
import { ensureFormulaCheckpoint } from '../../src/sidecar/model/default-model.js';
import { loadModel } from '../../src/sidecar/model/load.js';
import type { CpuProfile } from '../../src/sidecar/native.js';
import { tokens } from '../engine/single-stream.js';

const arg = (k: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : undefined);
const threads = Number(arg('--threads') ?? 16);
const isa = (arg('--isa') ?? 'amx') as 'amx' | 'avx512' | 'avx2';
const runs = Number(arg('--runs') ?? 5);
const label = arg('--label') ?? '';
const prefillTokens = 512;

const dir = (await ensureFormulaCheckpoint()).dir;
const { model } = await loadModel(dir, { isa, quantization: 'none', precise: true, threads, kvBlocks: 64, blockSize: 16 });
const blocks = Int32Array.from({ length: 40 }, (_, i) => i);
await model.generateGreedy({ tokens: tokens(16, 1), blockTable: blocks }, 8);
const delta = (a: CpuProfile, b: CpuProfile) => {
  const d: Record<string, number> = {};
  for (const k of Object.keys(b) as (keyof CpuProfile)[]) if (k !== 'threads') d[k] = +(b[k] - a[k]).toFixed(3);
  return d;
};
const prefill: { tokS: number; wallMs: number; profile: Record<string, number> }[] = [];
for (let r = 0; r < runs; r++) {
  const before = model.info().profile!;
  const t0 = performance.now();
  await model.forward([{ tokens: tokens(prefillTokens, 20 + r), startPos: 0, blockTable: blocks, logits: 1 }]);
  const ms = performance.now() - t0;
  prefill.push({ tokS: +((prefillTokens / ms) * 1000).toFixed(1), wallMs: +ms.toFixed(2), profile: delta(before, model.info().profile!) });
}
const decode: number[] = [];
let decodeProfile: Record<string, number> = {};
for (let r = 0; r < 3; r++) {
  const before = model.info().profile!;
  const g = await model.generateGreedy({ tokens: tokens(16, 10 + r), blockTable: blocks }, 65);
  decode.push(+((64 / g.decodeMs) * 1000).toFixed(1));
  const d = delta(before, model.info().profile!);
  decodeProfile = Object.fromEntries(Object.entries(d).map(([k, v]) => [k, +(v / d.steps!).toFixed(4)]));
}
const bw = model.memoryBandwidth(1 << 30);
const sorted = [...prefill].sort((a, b) => a.tokS - b.tokS);
const med = sorted[Math.floor(sorted.length / 2)]!;
const p = med.profile;
const share = (busy: number, wall: number) => +(busy / (wall * threads)).toFixed(3);
console.log(
  JSON.stringify({
    label,
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('EE_'))),
    threads,
    isa,
    prefillTokS: prefill.map((x) => x.tokS),
    medianPrefill: { ...med, gemmBusyShare: share(p.gemmBusyMs!, p.gemmMs! - p.prepMs!), attentionBusyShare: share(p.attentionBusyMs!, p.attentionMs!) },
    decodeTokS: decode,
    decodeProfilePerStep: decodeProfile,
    readBandwidthGBs: +(bw / 1e9).toFixed(1),
  }),
);
model.close();
