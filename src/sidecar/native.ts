// Typed access to the native addon (native/build/Release/ernie_native.node, built by `npm ci`).
import { createRequire } from 'node:module';
import { ENGINE_LIMITS, type EngineLimits, type EngineOptions, type NativeEngine, type StepCallback } from './engine/native-engine.js';
import { packagePath } from './package-root.js';

export interface NativeConfig {
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  tieWordEmbeddings: boolean;
  ropeInterleaved: boolean;
  invFreq: Float32Array; // headDim / 2 values
}

export type NativeDType = 'BF16' | 'F16' | 'F32';

export interface NativeTensor {
  name: string;
  path: string;
  dtype: NativeDType;
  shape: number[];
  offset: number; // absolute byte offset in the file
  nbytes: number;
}

export interface NativeLoadOptions {
  config: NativeConfig;
  tensors: NativeTensor[];
  threads?: number; // 0 / undefined: all cores
  kvBlocks: number;
  blockSize: number;
  /** CPU kernels: '' = the best this CPU allows (AMX where the kernel grants tiles, else AVX-512, else AVX2). */
  isa?: '' | 'amx' | 'avx512' | 'avx2';
  precise?: boolean; // split activations into two bf16 planes (default true)
  /** CPU: 'int8' quantizes the weights at load (per output row) and each GEMM input per token (default 'none'). */
  quantization?: 'none' | 'int8';
  /** With int8: the LM head too (default true); false keeps it bf16. */
  lmHeadInt8?: boolean;
  /** The LM head's GEMM input in two planes (true) or one (false); default: as `precise`. Apart from `precise` on the CPU only. */
  lmHeadPrecise?: boolean;
  /** 'cpu' (default) or 'cuda': the CUDA runner of native/cuda/, dlopen()ed from cudaLibrary. */
  device?: 'cpu' | 'cuda';
  cudaLibrary?: string;
  /** cuda, kvBlocks 0: size the KV cache so the process uses this fraction of GPU memory (default 0.9). */
  gpuMemoryUtilization?: number;
  /** The KV cache's element type: 'float32' (default; the only one on the CPU) or 'bfloat16' (CUDA). */
  kvCacheDtype?: 'float32' | 'bfloat16';
  /** cuda: never replay steps from CUDA graphs. */
  enforceEager?: boolean;
  /** cuda: capture every decode and mixed-step graph while loading (the sidecar's startup)
   * rather than each on its first use (a stall inside the step that first needs it). */
  captureGraphs?: boolean;
  /** cuda: decode graphs serve sequences up to this length and batches up to maxNumSeqs. */
  maxModelLen?: number;
  maxNumSeqs?: number;
  maxNumBatchedTokens?: number;
}

/** One sequence's part of a forward step. logits: 0 none, 1 last token, 2 every token. */
export interface NativeSlice {
  tokens: Int32Array;
  startPos: number;
  blockTable: Int32Array;
  logits: 0 | 1 | 2;
}

export interface NativeModelInfo {
  isa: string; // CPU kernel set, or 'cuda'
  /** CPU: the weights' format and the GEMM kernels of the layers and of the LM head. */
  quantization?: 'none' | 'int8';
  gemm?: string;
  lmHeadGemm?: string;
  /** CPU: the layers' and the LM head's GEMM input planes (2: value and residual, 1: value). */
  planes?: 1 | 2;
  lmHeadPlanes?: 1 | 2;
  device: 'cpu' | 'cuda';
  /** graphCaptures: CUDA graphs captured since load (at startup, or on first use inside a step). */
  cuda?: { deviceName: string; graphSteps: number; eagerSteps: number; graphCaptures: number; gpuBytesUsed: number };
  threads: number;
  kvBlocks: number;
  blockSize: number;
  kvBytes: number;
  weightBytes: number;
  /** CPU: cumulative wall time per phase since load (ms); gemmMs is the layers' GEMMs, split by matrix group. */
  profile?: CpuProfile;
}

export interface CpuProfile {
  gemmMs: number;
  gemmQkvMs: number;
  gemmOMs: number;
  gemmGateUpMs: number;
  gemmDownMs: number;
  attentionMs: number;
  otherMs: number;
  lmHeadMs: number;
  /** Parts of otherMs: embedding lookup and RoPE angles, RoPE and K/V cache writes, the residual after down_proj. */
  embedMs: number;
  ropeKvMs: number;
  residualMs: number;
  /** The GEMMs' activation preparation (inside gemmMs), with the norms and silu(gate) * up fused into it. */
  prepMs: number;
  /** Task time summed over the threads (thread-ms): busy / (wall * threads) is the share not idle. */
  gemmBusyMs: number;
  attentionBusyMs: number;
  threads: number;
  steps: number;
  tokens: number;
}

export interface NativeModel {
  info(): NativeModelInfo;
  /** Logit rows for the slices that asked, in order, each vocabSize floats. */
  forward(slices: NativeSlice[]): Promise<Float32Array>;
  /** Greedy decoding in one native call; prefill in chunks of `chunk` tokens. */
  generateGreedy(
    seq: Omit<NativeSlice, 'logits' | 'startPos'>,
    maxNew: number,
    chunk?: number,
  ): Promise<{ tokens: Int32Array; prefillMs: number; decodeMs: number }>;
  /** Read bandwidth in bytes/s measured with the engine's thread pool. */
  memoryBandwidth(bytes: number): number;
  /**
   * Ops/s of the widest multiply-add of the kernels the layers' GEMMs run, on every pool thread at once:
   * bf16 dot products (AVX512-BF16, AMX-BF16 where chosen; FLOP/s), or under --quantization int8 the int8
   * kernels' (vpdpbusd on AVX512-VNNI, AMX-INT8 on AMX hosts; integer ops/s, twice vdpbf16ps's per instruction).
   */
  computePeak(): number;
  close(): void;
}

/** The block pool alone, for unit tests (hashes are 64-bit, as BigInt). */
export interface NativeBlockPool {
  allocate(): number; // -1 when none is free
  incref(block: number): void;
  decref(block: number): void;
  acquire(block: number): void;
  refCount(block: number): number;
  numFree(): number;
  cached(hash: bigint): number;
  setHash(block: number, hash: bigint): void;
  freeOrder(): number[];
}

export type NativeEngineConfig = Partial<EngineOptions> & Pick<EngineOptions, 'maxModelLen'> & EngineLimits;

export interface NativeAddon {
  loadModel(opts: NativeLoadOptions): Promise<NativeModel>;
  /** maxModelLen and the limits are required: the native engine has no defaults for them. */
  createEngine(load: NativeLoadOptions, engine: NativeEngineConfig, onStep: StepCallback): Promise<NativeEngine>;
  BlockPool: new (numBlocks: number) => NativeBlockPool;
  formulaTensor(name: string, numel: number, salt?: number): Promise<Buffer>;
  cpuInfo(): CpuInfo;
  /** Whether libernie_cuda.so at this path loads and sees a GPU (never throws). */
  cudaInfo(library: string): CudaProbe;
  /** The CPU GEMM kernels against a double-precision reference on random data (tests). */
  gemmCheck(opts: { isa: 'amx' | 'avx512' | 'avx2'; m: number; n: number; k: number; precise: boolean; seed: number }): GemmCheck;
  /** The int8 GEMM kernels against exact and double-precision references on random data (tests). */
  qgemmCheck(opts: { isa: Int8Isa | 'best'; m: number; n: number; k: number; precise: boolean; seed: number }): QgemmCheck;
  /** Structured output's bell (native/src/engine/grammar_bell.h): rung by the engine after a step that
   * posted constrained tokens, and by the grammar pool after a message to its workers. The count. */
  grammarBell(): number;
  /** Blocks the calling thread (a grammar worker's) until the count moves past `seen` or the timeout
   * passes; whether it moved. */
  grammarWait(seen: number, timeoutMs: number): boolean;
  grammarRing(): void;
  /** Milliseconds since the last ring (-1: never). */
  grammarRingAge(): number;
  abiVersion: number;
}

/** What the CPU offers the kernels: the bf16 sets, AMX (usable: CPUID and the kernel's tile grant), int8 sets. */
export interface CpuInfo {
  avx512bf16: boolean;
  avx2: boolean;
  amx: boolean;
  avx512vnni: boolean;
  avxvnni: boolean;
  best: string;
  bestInt8: string;
  cores: number;
  /** On AMX hosts, what amx-bf16 GEMMs of up to 4 rows run on: "avx512bf16 (tile-exact, ... model)" or "amx-bf16"; "none" elsewhere. */
  amxBf16SmallRows: string;
  /** On AMX hosts, the scalar order that reproduces tdpbf16ps's bits (a diagnosis: "sdm", "sequential", "pair-fused", "tile-fused", "tile-rounded", "unknown"); "none" elsewhere. */
  amxBf16TileOrder: string;
}

export type Int8Isa = 'amx' | 'avx512' | 'avxvnni' | 'avx2';

export interface QgemmCheck {
  isa: string;
  maxRelErr: number; // against sum_k xq wq * sw * sx in double, relative to sum_k |xq wq| * sw * sx
  quantRelErr: number; // against the unquantized x . w in double, relative to sum_k |x w|
  scalarIdentical: boolean; // the same bits as float(sum_k xq wq) * sw * sx in scalar code
  splitsIdentical: boolean;
  rowsIdentical: boolean;
}

export interface GemmCheck {
  isa: string;
  maxRelErr: number; // max |y - ref| / sum_k |x w| over the outputs
  splitsIdentical: boolean; // 32-row tasks give the same bits as one call
  rowsIdentical: boolean; // each row alone gives the same bits as the batch
  unpackExact: boolean; // unpack_row returns the packed matrix's rows exactly
}

export interface CudaProbe {
  available: boolean;
  devices: number;
  reason: string; // why not, when unavailable
}

let cached: NativeAddon | undefined;

/**
 * Starts a native engine with the API's limits (ENGINE_LIMITS, which the binding requires: it has no
 * values of its own), so callers pass only what they choose. The one place the limits are applied.
 */
export async function createNativeEngine(load: NativeLoadOptions, engine: Omit<NativeEngineConfig, keyof EngineLimits>, onStep: StepCallback): Promise<NativeEngine> {
  // The engine keeps only a pointer to a request's grammar buffer: it is held here until the request's
  // last output (the one with timing), after which the step thread never reads it again.
  const grammars = new Map<number, Int32Array>();
  const e = await native().createEngine(load, { ...ENGINE_LIMITS, ...engine }, (outs) => {
    if (grammars.size > 0) for (const o of outs) if (o.timing) grammars.delete(o.id);
    onStep(outs);
  });
  return {
    submit: (req) => {
      const refused = e.submit(req);
      if (refused === null && req.grammar) grammars.set(req.id, req.grammar);
      return refused;
    },
    abort: (id) => e.abort(id),
    pause: (id, paused) => e.pause(id, paused),
    stats: () => e.stats(),
    waitingCount: () => e.waitingCount(),
    close: async () => {
      await e.close();
      grammars.clear();
    },
  };
}

/** Loads the addon once. Throws with a clear message when it was not built. */
export function native(): NativeAddon {
  if (cached) return cached;
  const file = packagePath('native', 'build', 'Release', 'ernie_native.node');
  try {
    cached = createRequire(import.meta.url)(file) as NativeAddon;
  } catch (e) {
    throw new Error(`the native engine is not built (${file}): run \`npm ci\` or \`npm run build:native\`\n${String(e)}`);
  }
  return cached;
}
