// The int8 GEMM kernels (--quantization int8) on random data (native qgemmCheck), for every int8
// path this CPU has (AMX-INT8, AVX512-VNNI, AVX-VNNI, AVX2): against the exact integer sums in
// double (only the fp32 epilogue may round), against the unquantized product (the quantization
// error, bounded), bit-identical to the shared scalar epilogue (so all paths agree with each other),
// and bit-identical whatever the task split or batch composition. Shapes include every tail
// (N % 32 plain rows, K padded to 64, odd M, M past the kernels' row blocks).
import { describe, expect, it } from 'vitest';
import { native, type Int8Isa } from '../../src/sidecar/native.js';

const addon = native();
const cpu = addon.cpuInfo();
const has: Record<Int8Isa, boolean> = { amx: cpu.amx, avx512: cpu.avx512vnni, avxvnni: cpu.avxvnni, avx2: cpu.avx2 };
const names: Record<Int8Isa, string> = { amx: 'amx-int8', avx512: 'avx512vnni', avxvnni: 'avxvnni', avx2: 'avx2' };
const isas = (Object.keys(has) as Int8Isa[]).filter((i) => has[i]);
for (const i of Object.keys(has) as Int8Isa[])
  if (!has[i]) console.log(`[qgemm] ${names[i]}: skipped, this CPU lacks it${i === 'amx' ? ' (or the kernel refused the tile state)' : ''}`);

const shapes: Array<[number, number, number]> = [
  [1, 64, 64],
  [6, 96, 64],
  [12, 64, 128],
  [13, 128, 256],
  [33, 96, 1024], // two AMX row groups and a tail group
  [64, 256, 1024],
  [7, 100, 70], // N % 32 = 4 plain rows, K padded 70 -> 128
  [25, 33, 1], // one block + one plain row, K = 1
  [3, 31, 45], // plain rows only
];

describe.each(isas)('%s int8 GEMM', (isa) => {
  for (const precise of [true, false]) {
    it.each(shapes)(`${precise ? 'two planes' : 'one plane'} M=%i N=%i K=%i`, (m, n, k) => {
      const r = addon.qgemmCheck({ isa, m, n, k, precise, seed: m * 1000 + n + k });
      expect(r.isa).toBe(names[isa]);
      expect(r.scalarIdentical).toBe(true);
      expect(r.splitsIdentical).toBe(true);
      expect(r.rowsIdentical).toBe(true);
      expect(r.maxRelErr).toBeLessThan(1e-6);
      // Per-row weights and per-token activations on uniform data: a few percent at most (one
      // plane, K = 1 the worst), less with the residual plane.
      expect(r.quantRelErr).toBeLessThan(precise ? 0.03 : 0.06);
    });
  }
});

it('refuses an int8 ISA it does not know and a bad shape', () => {
  expect(() => addon.qgemmCheck({ isa: 'sse9' as 'avx2', m: 1, n: 1, k: 1, precise: true, seed: 1 })).toThrow(/not supported/);
  expect(() => addon.qgemmCheck({ isa: isas[0]!, m: 0, n: 1, k: 1, precise: true, seed: 1 })).toThrow(/bad shape/);
});
