// The CPU engine paths the benchmarks compare (bench:engine:cpu picks them by index, bench/wave-ab.ts
// by name): bf16 weights on AVX-512 (precise), on AMX-BF16 where the CPU has it, --quantization int8
// on the default int8 kernels (AMX hosts: AMX-INT8 from 16 rows, AVX512-VNNI below; int8's defaults:
// two activation planes in the layers, one on the LM head, a bf16 KV cache where bf16DotAttentionFast,
// else fp32), on AMX hosts AVX512-VNNI alone and AMX-INT8 alone, then int8 with one activation plane
// (--dtype bfloat16), with two on the LM head too (--lm-head-planes 2), with an fp32 KV cache
// (--kv-cache-dtype float32), and precise bf16 with a bf16 KV cache.
import type { CpuInfo, NativeLoadOptions } from '../../src/sidecar/native.js';

export type CpuPath = { name: string } & Pick<NativeLoadOptions, 'isa' | 'quantization' | 'precise' | 'lmHeadPrecise' | 'kvCacheDtype'>;

export function cpuPaths(cpu: CpuInfo): CpuPath[] {
  return [
    { name: 'bf16 precise, avx512', isa: 'avx512', quantization: 'none', precise: true },
    ...(cpu.amx ? [{ name: 'bf16 precise, amx-bf16', isa: 'amx', quantization: 'none', precise: true } as CpuPath] : []),
    { name: 'int8, best', isa: '', quantization: 'int8', precise: true },
    ...(cpu.amx && cpu.avx512vnni ? [{ name: 'int8, avx512vnni', isa: 'avx512', quantization: 'int8', precise: true } as CpuPath] : []),
    ...(cpu.amx ? [{ name: 'int8, amx-int8 at every M', isa: 'amx', quantization: 'int8', precise: true } as CpuPath] : []),
    // Later rows come last, so that the indices above keep their meaning in older commands.
    { name: 'int8 1 plane, best', isa: '', quantization: 'int8', precise: false },
    { name: 'int8, LM head 2 planes', isa: '', quantization: 'int8', precise: true, lmHeadPrecise: true },
    // int8's default with --kv-cache-dtype float32 (its default before session 21, and still on AMX hosts).
    { name: 'int8, fp32 KV cache', isa: '', quantization: 'int8', precise: true, kvCacheDtype: 'float32' },
    { name: 'bf16 precise, avx512, bf16 KV cache', isa: 'avx512', quantization: 'none', precise: true, kvCacheDtype: 'bfloat16' },
  ];
}
