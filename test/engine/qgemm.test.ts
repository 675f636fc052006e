// The int8 GEMM kernels (--quantization int8) on random data (native qgemmCheck), for every int8
// path this CPU has (AMX-INT8, AVX512-VNNI, AVX-VNNI, AVX2): against the exact integer sums in
// double (only the fp32 epilogue may round), against the unquantized product (the quantization
// error, bounded), bit-identical to the shared scalar epilogue (so all paths agree with each other),
// and bit-identical whatever the task split or batch composition. Shapes include every tail
// (N % 32 plain rows, K padded to 64, odd M, M past the kernels' row blocks).
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { native, type Int8Isa } from '../../src/sidecar/native.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

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
  // Few rows take several blocks per pass (AVX512-VNNI: 4 for one row, 2 for two or three) and the
  // blocks left over one at a time, then the plain rows.
  [1, 232, 192],
  [2, 200, 64],
  [3, 168, 128],
];

// On AMX hosts the default ('best') switches between AMX-INT8 and AVX512-VNNI on M: checked as a path
// of its own there (elsewhere it is one of the above).
const paths: Array<Int8Isa | 'best'> = cpu.bestInt8.includes('/') ? [...isas, 'best'] : isas;
const expected = (isa: Int8Isa | 'best') => (isa === 'best' ? cpu.bestInt8 : names[isa]);

describe.each(paths)('%s int8 GEMM', (isa) => {
  for (const precise of [true, false]) {
    it.each(shapes)(`${precise ? 'two planes' : 'one plane'} M=%i N=%i K=%i`, (m, n, k) => {
      const r = addon.qgemmCheck({ isa, m, n, k, precise, seed: m * 1000 + n + k });
      expect(r.isa).toBe(expected(isa));
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

// The AVX-VNNI kernels issue vpdpbusd by inline asm (cpu/qgemm_avx2.inc), where the assembler picks
// the encoding: only the VEX form runs on AVX2 hosts without AVX-512, and an AVX-512 test host would
// run the EVEX form without complaint. So the built library's encodings are checked, where objdump is.
const vnniLib = path.join(root, 'native/build/Release/kernels_avxvnni.a');
const canDisassemble = existsSync(vnniLib) && spawnSync('objdump', ['--version']).status === 0;
if (!canDisassemble) console.log('[qgemm] AVX-VNNI encoding check skipped: needs objdump and a built addon');
it.runIf(canDisassemble)('the AVX-VNNI library issues vpdpbusd in its VEX form only', () => {
  const r = spawnSync('objdump', ['-d', vnniLib], { encoding: 'utf8', maxBuffer: 64 << 20 });
  expect(r.status).toBe(0);
  // objdump -d lines: "  addr:\t<bytes>\t<mnemonic> <operands>"; EVEX starts with 0x62, VEX with 0xc4/0xc5.
  const first = r.stdout.split('\n').filter((l) => /\tvpdpbusd|\t\{vex\} vpdpbusd/.test(l)).map((l) => l.split('\t')[1]!.trim().slice(0, 2));
  expect(first.length).toBeGreaterThan(0);
  expect(first.filter((b) => b !== 'c4' && b !== 'c5')).toEqual([]);
});

it('refuses an int8 ISA it does not know and a bad shape', () => {
  expect(() => addon.qgemmCheck({ isa: 'sse9' as 'avx2', m: 1, n: 1, k: 1, precise: true, seed: 1 })).toThrow(/not supported/);
  expect(() => addon.qgemmCheck({ isa: isas[0]!, m: 0, n: 1, k: 1, precise: true, seed: 1 })).toThrow(/bad shape/);
});

// AMX's tile logic (layouts, row groups, tails, the two planes) on a software model of the tile
// unit, so a CPU without AMX checks it too: native/tools/amx-emu-check.sh builds amx.cc onto
// native/tools/amx_emulate.h against the addon's own kernel objects, once per documented tdpbf16ps
// order, and each time the AVX-512 model of the tile arithmetic (small-M bf16) must match the tiles.
const objects = path.join(root, 'native/build/Release/obj.target/ernie_native/src/cpu/kernels.o');
const canEmulate = cpu.avx512bf16 && cpu.avx512vnni && existsSync(objects) && spawnSync('g++', ['--version']).status === 0;
if (!canEmulate) console.log('[qgemm] AMX emulation check skipped: needs AVX512-BF16/VNNI, g++ and a built addon');
it.runIf(canEmulate)('AMX kernels on the software tile model: bf16 within 2e-6, int8 bit-identical to AVX512-VNNI', () => {
  const r = spawnSync('bash', [path.join(root, 'native/tools/amx-emu-check.sh')], { encoding: 'utf8' });
  console.log(r.stdout.split('\n').filter((l) => !l.startsWith('M=')).join('\n'));
  expect(r.stderr).toBe('');
  expect(r.stdout.match(/^all passed$/gm)).toHaveLength(2);
  expect(r.stdout).toContain('bf16 rows <= 4: avx512bf16 (tile-exact, sequential model)');
  expect(r.stdout).toContain('bf16 rows <= 4: avx512bf16 (tile-exact, sdm model)');
  expect(r.status).toBe(0);
}, 300_000); // two builds of amx.cc: minutes on a loaded 2-core host
