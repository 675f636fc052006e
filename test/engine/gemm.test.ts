// The CPU GEMM kernels on random data against a double-precision reference (native gemmCheck):
// the shapes of the model (multiples of 32) and the tails no checkpoint here reaches (N % 32 rows,
// K % 32 columns, M % 12 rows), for each ISA this CPU has, fp32-grade (precise) and plain bf16.
// Each output must be bit-identical whatever the task split or batch composition (the engine's
// batch invariance rests on it).
import { describe, expect, it } from 'vitest';
import { native } from '../../src/sidecar/native.js';

const addon = native();
const cpu = addon.cpuInfo();
const isas = (['amx', 'avx512', 'avx2'] as const).filter((i) => (i === 'amx' ? cpu.amx : i === 'avx512' ? cpu.avx512bf16 : cpu.avx2));
if (isas.length < 3) console.log(`[gemm] only ${isas.join(', ') || 'no'} ISA on this CPU; the others are not checked here (AMX-BF16 needs AMX and the kernel's tile grant)`);

const shapes: Array<[number, number, number]> = [
  [1, 64, 64],
  [5, 96, 32],
  [12, 64, 128],
  [13, 128, 256],
  [64, 256, 1024],
  [7, 100, 70], // N % 32 = 4 plain rows, K padded 70 -> 96
  [25, 33, 1], // one block + one plain row, K = 1
  [3, 31, 45], // plain rows only
  [33, 96, 1024], // AMX: two row groups of 16 and a tail group of 1
];

describe.each(isas)('%s GEMM', (isa) => {
  for (const precise of isa !== 'avx2' ? [true, false] : [true]) {
    it.each(shapes)(`${precise ? 'precise' : 'bf16'} M=%i N=%i K=%i`, (m, n, k) => {
      const r = addon.gemmCheck({ isa, m, n, k, precise, seed: m * 1000 + n + k });
      expect(r.isa).toBe(isa === 'amx' ? 'amx-bf16' : isa === 'avx512' ? 'avx512bf16' : 'avx2');
      expect(r.unpackExact).toBe(true);
      expect(r.splitsIdentical).toBe(true);
      expect(r.rowsIdentical).toBe(true);
      // fp32 accumulation of K products: relative error a few ulps of float per term at most.
      expect(r.maxRelErr).toBeLessThan(2e-6);
    });
  }
});

it('refuses an ISA name it does not know and a bad shape', () => {
  expect(() => addon.gemmCheck({ isa: 'sse9' as 'avx2', m: 1, n: 1, k: 1, precise: true, seed: 1 })).toThrow(/not supported/);
  expect(() => addon.gemmCheck({ isa: isas[0]!, m: 0, n: 1, k: 1, precise: true, seed: 1 })).toThrow(/bad shape/);
});
