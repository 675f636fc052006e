// kernelNames (src/sidecar/model/load.ts): the start-up log's line of kernels, as the addon picks them.
import { describe, expect, it } from 'vitest';
import { bf16DotAttentionFast, kernelNames } from '../../../src/sidecar/model/load.js';
import type { CpuInfo } from '../../../src/sidecar/native.js';

const zen5: CpuInfo = { avx512bf16: true, avx2: true, amx: false, avx512vnni: true, avxvnni: true, best: 'avx512bf16', bestInt8: 'avx512vnni', cores: 2, amxBf16SmallRows: 'none', amxBf16TileOrder: 'none' };
const xeon: CpuInfo = { ...zen5, amx: true, best: 'amx-bf16', bestInt8: 'amx-int8/avx512vnni', cores: 16, amxBf16SmallRows: 'amx-bf16', amxBf16TileOrder: 'unknown' };
const xeonModel: CpuInfo = { ...xeon, amxBf16SmallRows: 'avx512bf16 (tile-exact, sdm model)' };

describe('kernelNames', () => {
  it('names the bf16 GEMMs, their planes and the attention kernels', () => {
    expect(kernelNames({ device: 'cpu' }, zen5)).toBe('gemm avx512bf16 (bf16 weights, 2 planes), attention avx512bf16');
    expect(kernelNames({ device: 'cpu', precise: false }, xeon)).toBe('gemm amx-bf16 (bf16 weights, 1 plane), attention avx512bf16');
    expect(kernelNames({ device: 'cpu', isa: 'avx512' }, xeon)).toBe('gemm avx512bf16 (bf16 weights, 2 planes), attention avx512bf16');
  });

  it('names the kernel of small-M amx-bf16 GEMMs when it is the AVX-512 model of the tiles', () => {
    expect(kernelNames({ device: 'cpu' }, xeonModel)).toBe('gemm amx-bf16 (bf16 weights, 2 planes; up to 4 rows avx512bf16 (tile-exact, sdm model)), attention avx512bf16');
    expect(kernelNames({ device: 'cpu', isa: 'avx512' }, xeonModel)).toBe('gemm avx512bf16 (bf16 weights, 2 planes), attention avx512bf16');
  });

  it('names the int8 GEMMs and the LM head, bf16 when asked', () => {
    expect(kernelNames({ device: 'cpu', quantization: 'int8' }, xeon)).toBe('gemm amx-int8/avx512vnni (int8 weights, 2 planes), lm_head amx-int8/avx512vnni (1 plane), attention avx512bf16');
    expect(kernelNames({ device: 'cpu', quantization: 'int8', lmHeadInt8: false, isa: 'avx2' }, zen5)).toBe('gemm avxvnni (int8 weights, 2 planes), lm_head avx2 (bf16), attention avx2');
    expect(kernelNames({ device: 'cuda', quantization: 'none' }, zen5)).toBe('cuda');
  });

  it("names the LM head's planes where --lm-head-planes sets them apart from the layers'", () => {
    expect(kernelNames({ device: 'cpu', quantization: 'int8', lmHeadPrecise: false }, zen5)).toBe('gemm avx512vnni (int8 weights, 2 planes), lm_head avx512vnni (1 plane), attention avx512bf16');
    expect(kernelNames({ device: 'cpu', quantization: 'int8', lmHeadPrecise: true }, zen5)).toBe('gemm avx512vnni (int8 weights, 2 planes), lm_head avx512vnni, attention avx512bf16');
    expect(kernelNames({ device: 'cpu', quantization: 'int8', lmHeadInt8: false, precise: false, lmHeadPrecise: true }, zen5)).toBe('gemm avx512vnni (int8 weights, 1 plane), lm_head avx512bf16 (bf16, 2 planes), attention avx512bf16');
    expect(kernelNames({ device: 'cpu', lmHeadPrecise: false }, zen5)).toBe('gemm avx512bf16 (bf16 weights, 2 planes), lm_head 1 plane, attention avx512bf16');
  });
});

describe('bf16DotAttentionFast (int8 takes a bf16 KV cache by default where it is true)', () => {
  it('holds for the AVX-512 kernels on an AVX512-BF16 host without AMX, only', () => {
    expect([bf16DotAttentionFast(zen5, ''), bf16DotAttentionFast(zen5, 'avx512')]).toEqual([true, true]);
    expect(bf16DotAttentionFast(zen5, 'avx2')).toBe(false);
    expect([bf16DotAttentionFast(xeon, ''), bf16DotAttentionFast(xeon, 'avx512'), bf16DotAttentionFast(xeon, 'amx')]).toEqual([false, false, false]);
    expect(bf16DotAttentionFast({ ...zen5, avx512bf16: false, best: 'avx2' }, '')).toBe(false);
  });
});
