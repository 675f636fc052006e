// Loads a checkpoint directory into the native engine: reads and checks the tensor table (TS),
// then maps the weights and sizes the paged KV cache (native, off the event loop). Sizing is the
// engine plan's (../engine/plan.ts); this file resolves the device and samples the free memory
// (./memory.ts: MemAvailable and the cgroup limit).
import { planEngine, resolveLmHeadPrecise, type EnginePlan, type PlanOptions } from '../engine/plan.js';
import { native, type CpuInfo, type NativeLoadOptions, type NativeModel } from '../native.js';
import { readCheckpoint, type Checkpoint } from './checkpoint.js';
import { defaultCudaLibrary, resolveDevice, type DeviceChoice } from './device.js';
import { availableMemory } from './memory.js';

/**
 * What a caller chooses when loading: the plan's options (defaults in ../engine/plan.ts), the CUDA
 * library, and the device ('cpu' is the default here; 'auto' picks CUDA when native/cuda is built and
 * a GPU is present).
 */
export type LoadOptions = PlanOptions & {
  cudaLibrary?: string;
  device?: DeviceChoice;
};

export interface LoadedModel {
  model: NativeModel;
  checkpoint: Checkpoint;
  blockSize: number;
  kvBlocks: number;
  kvBlockBytes: number;
}

/** The checkpoint's tensor bytes. */
export function weightBytes(ck: Checkpoint): number {
  return ck.tensors.reduce((n, t) => n + t.nbytes, 0);
}

/** Where `choice` loads on this machine, with the addon's CUDA probe. */
export function resolveNativeDevice(choice: DeviceChoice, cudaLibrary: string): 'cpu' | 'cuda' {
  return resolveDevice(choice, cudaLibrary, (lib) => native().cudaInfo(lib));
}

/**
 * The engine plan for a checkpoint on this machine: the device resolved (by `resolve`: the addon's
 * probe, or a test double's), the free RAM sampled now. The sidecar and every direct loader plan here.
 */
export function planCheckpoint(checkpoint: Checkpoint, opts: LoadOptions = {}, resolve = resolveNativeDevice): EnginePlan {
  const { cudaLibrary = defaultCudaLibrary(), device = 'cpu', ...options } = opts;
  const free = availableMemory();
  return planEngine({
    config: checkpoint.config,
    weightBytes: weightBytes(checkpoint),
    device: resolve(device, cudaLibrary),
    cudaLibrary,
    freeMemory: free.bytes,
    freeMemorySource: free.source,
    bf16DotFast: bf16DotAttentionFast(native().cpuInfo(), options.isa ?? ''),
    options,
  });
}

/**
 * Whether attention over a bf16 KV cache runs the AVX512-BF16 dot-product kernel and it is this CPU's
 * fast attention: the AVX-512 kernels chosen (`isa` '' or 'avx512') on a host with AVX512-BF16 and no
 * AMX (Zen 4/5). The AMX Xeons measured run `vdpbf16ps` below their fp32 FMAs (bench/results/
 * attn-dot-intel.json), and 'amx' / 'avx2' kernels are not this kernel's choice to make.
 */
export function bf16DotAttentionFast(cpu: CpuInfo, isa: string): boolean {
  return cpu.avx512bf16 && !cpu.amx && (isa === '' || isa === 'avx512');
}

/**
 * The GEMM kernels a CPU load will run, as the addon picks them (cpu/kernels.cc, cpu/qgemm.cc):
 * the layers', the LM head's and the attention's, for the start-up log.
 */
export function kernelNames(load: Pick<NativeLoadOptions, 'device' | 'isa' | 'quantization' | 'lmHeadInt8' | 'precise' | 'lmHeadPrecise'>, cpu: CpuInfo): string {
  if (load.device === 'cuda') return 'cuda';
  const isa = load.isa ?? '';
  const bf16 = isa === 'amx' ? 'amx-bf16' : isa === 'avx512' ? 'avx512bf16' : isa === 'avx2' ? 'avx2' : cpu.best;
  const attention = bf16 === 'amx-bf16' ? 'avx512bf16' : bf16;
  const planes = load.precise === false ? '1 plane' : '2 planes';
  // The LM head's planes, named only where they differ from the layers'.
  const head2 = resolveLmHeadPrecise(load);
  const headPlanes = head2 === (load.precise !== false) ? '' : head2 ? '2 planes' : '1 plane';
  // Decode steps of up to 4 rows on the AVX-512 model of the tile arithmetic, where it gives the tiles' bits.
  const small = bf16 === 'amx-bf16' && cpu.amxBf16SmallRows.startsWith('avx512') ? `; up to 4 rows ${cpu.amxBf16SmallRows}` : '';
  if (load.quantization !== 'int8') return `gemm ${bf16} (bf16 weights, ${planes}${small}),${headPlanes ? ` lm_head ${headPlanes},` : ''} attention ${attention}`;
  const i8 = isa === 'amx' ? 'amx-int8' : isa === 'avx512' ? 'avx512vnni' : isa === 'avx2' ? (cpu.avxvnni ? 'avxvnni' : 'avx2') : cpu.bestInt8;
  const notes = [load.lmHeadInt8 === false ? 'bf16' : '', headPlanes].filter(Boolean).join(', ');
  const head = `${load.lmHeadInt8 === false ? bf16 : i8}${notes ? ` (${notes})` : ''}`;
  return `gemm ${i8} (int8 weights, ${planes}), lm_head ${head}, attention ${attention}`;
}

/** The native load options for a checkpoint (device, weights, KV sizing, kernels). */
export function nativeLoadOptions(checkpoint: Checkpoint, opts: LoadOptions = {}): NativeLoadOptions & { kvBlockBytes: number } {
  const plan = planCheckpoint(checkpoint, opts);
  return { config: checkpoint.config.native, tensors: checkpoint.tensors, ...plan.load, kvBlockBytes: plan.kvBlockBytes };
}

export async function loadModel(dir: string, opts: LoadOptions = {}): Promise<LoadedModel> {
  const checkpoint = await readCheckpoint(dir);
  const { kvBlockBytes: perBlock, ...lo } = nativeLoadOptions(checkpoint, opts);
  const model = await native().loadModel(lo);
  return { model, checkpoint, blockSize: lo.blockSize, kvBlocks: model.info().kvBlocks, kvBlockBytes: perBlock };
}
