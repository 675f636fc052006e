// config.json → the engine's model description. Every dimension comes from the file; nothing is
// fixed to the 0.3B shape. Supported: dense ERNIE-4.5 (interleaved RoPE) and Llama-family
// checkpoints with the same tensor names (half-split RoPE, no biases).
import type { NativeConfig } from '../native.js';
import { CheckpointError } from './safetensors.js';

const INTERLEAVED = new Set(['Ernie4_5ForCausalLM', 'Ernie4_5_ForCausalLM']);
const HALVES = new Set(['LlamaForCausalLM', 'MistralForCausalLM']);

export interface ModelConfigInfo {
  native: NativeConfig;
  architecture: string;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  ropeTheta: number;
}

type Json = Record<string, unknown>;

function int(file: string, c: Json, key: string, dflt?: number): number {
  const v = c[key] ?? dflt;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0)
    throw new CheckpointError(`${file}: '${key}' must be a positive integer (got ${JSON.stringify(c[key])})`);
  return v;
}

function ids(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

export function parseModelConfig(file: string, c: Json): ModelConfigInfo {
  const archs = Array.isArray(c.architectures) ? (c.architectures as unknown[]) : [];
  const arch = archs.find((a): a is string => typeof a === 'string' && (INTERLEAVED.has(a) || HALVES.has(a)));
  if (!arch)
    throw new CheckpointError(
      `${file}: unsupported architecture ${JSON.stringify(c.architectures ?? null)}; supported: ${[...INTERLEAVED, ...HALVES].join(', ')}`,
    );
  for (const k of ['use_bias', 'attention_bias', 'mlp_bias'])
    if (c[k] === true) throw new CheckpointError(`${file}: '${k}: true' is not supported (the engine has no bias terms)`);
  const hidden = int(file, c, 'hidden_size');
  const heads = int(file, c, 'num_attention_heads');
  const headDim = int(file, c, 'head_dim', Math.floor(hidden / heads));
  const kvHeads = int(file, c, 'num_key_value_heads', heads);
  if (heads % kvHeads !== 0)
    throw new CheckpointError(`${file}: num_attention_heads (${heads}) is not a multiple of num_key_value_heads (${kvHeads})`);
  if (headDim % 2 !== 0) throw new CheckpointError(`${file}: head_dim (${headDim}) must be even`);
  const rope = (c.rope_parameters ?? c.rope_scaling ?? {}) as Json;
  const theta = Number(c.rope_theta ?? rope.rope_theta ?? 10000);
  if (!(theta > 0)) throw new CheckpointError(`${file}: rope_theta must be positive`);
  const eps = Number(c.rms_norm_eps ?? 1e-6);
  if (!(eps > 0)) throw new CheckpointError(`${file}: rms_norm_eps must be positive`);
  return {
    architecture: arch,
    maxPositionEmbeddings: int(file, c, 'max_position_embeddings', 4096),
    bosTokenId: typeof c.bos_token_id === 'number' ? c.bos_token_id : null,
    eosTokenIds: ids(c.eos_token_id),
    ropeTheta: theta,
    native: {
      vocabSize: int(file, c, 'vocab_size'),
      hiddenSize: hidden,
      intermediateSize: int(file, c, 'intermediate_size'),
      numLayers: int(file, c, 'num_hidden_layers'),
      numHeads: heads,
      numKvHeads: kvHeads,
      headDim,
      rmsNormEps: eps,
      tieWordEmbeddings: c.tie_word_embeddings !== false,
      ropeInterleaved: INTERLEAVED.has(arch),
      invFreq: ropeInvFreq(file, headDim, theta, rope, (c.dtype ?? c.torch_dtype) === 'bfloat16'),
    },
  };
}

/**
 * RoPE inverse frequencies as the reference computes them in fp32:
 * inv_freq[i] = 1 / theta^(float(2i) / dim), each step rounded to fp32, then rope scaling.
 */
export function ropeInvFreq(file: string, dim: number, theta: number, rope: Json, bf16Model: boolean): Float32Array {
  const f = Math.fround;
  const roundBf16 = bf16Model ? toBf16 : (x: Float32Array) => x;
  const inv = new Float32Array(dim / 2);
  for (let i = 0; i < dim / 2; i++) inv[i] = f(1 / f(Math.pow(f(theta), f(f(2 * i) / f(dim)))));
  const type = String(rope.rope_type ?? rope.type ?? 'default');
  if (type === 'default') return roundBf16(inv);
  const factor = Number(rope.factor);
  if (!(factor > 0)) throw new CheckpointError(`${file}: rope scaling '${type}' needs a positive factor`);
  if (type === 'linear') return roundBf16(inv.map((x) => f(x / factor)));
  if (type === 'llama3') {
    const low = Number(rope.low_freq_factor ?? 1);
    const high = Number(rope.high_freq_factor ?? 4);
    const oldLen = Number(rope.original_max_position_embeddings ?? 8192);
    const lowWave = oldLen / low;
    const highWave = oldLen / high;
    return roundBf16(inv.map((x) => {
      const wave = (2 * Math.PI) / x;
      if (wave < highWave) return x;
      if (wave > lowWave) return f(x / factor);
      const smooth = (oldLen / wave - low) / (high - low);
      return f((1 - smooth) * (x / factor) + smooth * x);
    }));
  }
  throw new CheckpointError(`${file}: rope scaling type '${type}' is not supported (default, linear, llama3)`);
}

/**
 * NOTE: HF transformers keeps inv_freq as a non-persistent buffer that is cast with the model, so a
 * checkpoint whose config says dtype bfloat16 (as ERNIE-4.5's does) runs with the fp32 frequencies
 * rounded to bf16. We follow the reference: without this the tiny golden's logits drift by ~1e-3
 * per position (7.6e-2 at 40 tokens; 7e-5 with it). A config without that dtype keeps fp32.
 */
function toBf16(inv: Float32Array): Float32Array {
  const u = new Uint32Array(inv.buffer, inv.byteOffset, inv.length);
  for (let i = 0; i < u.length; i++) {
    const x = u[i]!;
    if ((x & 0x7fffffff) > 0x7f800000) continue; // NaN
    u[i] = ((x + 0x7fff + ((x >>> 16) & 1)) & 0xffff0000) >>> 0;
  }
  return inv;
}
