// An ERNIE-4.5 checkpoint directory (config.json + safetensors, dense, the shape of
// ERNIE-4.5-0.3B) as a GGUF file for llama.cpp's `ernie4_5` architecture, so that llama.cpp runs the
// very weights our engine runs. Matrices stay BF16 byte for byte, or (`q8_0`) become ggml's Q8_0 as
// llama.cpp's `--outtype q8_0` makes them (q8_0.ts); 1-D norm weights become F32 (exact: a bf16 value
// is the top half of an f32), as llama.cpp's own converter writes them.
//
// NOTE: no q/k permutation. HF's ERNIE-4.5 rotates interleaved pairs (x[2i], x[2i+1]) and llama.cpp
// gives ernie4_5 LLAMA_ROPE_TYPE_NORM, which rotates the same consecutive pairs; the permutation
// llama.cpp's converter applies to HF *Llama* exists only because HF Llama rotates halves (NEOX).
import { open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { readCheckpoint } from '../../src/sidecar/model/checkpoint.js';
import type { NativeTensor } from '../../src/sidecar/native.js';
import { parseSpModel, type SpModel } from '../../src/sidecar/tokenizer/sp-proto.js';
import { GgmlType, GgufType, writeGguf, type GgmlTypeId, type GgufKv, type GgufTensor } from './gguf.js';
import { quantizeQ8_0 } from './q8_0.js';

const ARCH = 'ernie4_5';
/** The matrices' type in the GGUF. */
export type GgufWeights = 'bf16' | 'q8_0';
// llama.h's llama_ftype: most tensors BF16 / Q8_0
const LLAMA_FTYPE: Record<GgufWeights, number> = { bf16: 32, q8_0: 7 };
const SP_UNUSED = 5; // sentencepiece PieceType.UNUSED == llama.cpp's LLAMA_TOKEN_TYPE_UNUSED

/** HF tensor name → GGUF name (llama.cpp's LLM_TENSOR_* names). */
export function ggufTensorName(hf: string): string {
  const fixed: Record<string, string> = {
    'model.embed_tokens.weight': 'token_embd.weight',
    'model.norm.weight': 'output_norm.weight',
    'lm_head.weight': 'output.weight',
  };
  if (fixed[hf]) return fixed[hf];
  const m = /^model\.layers\.(\d+)\.(.+)\.weight$/.exec(hf);
  const layer: Record<string, string> = {
    input_layernorm: 'attn_norm', post_attention_layernorm: 'ffn_norm',
    'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k', 'self_attn.v_proj': 'attn_v', 'self_attn.o_proj': 'attn_output',
    'mlp.gate_proj': 'ffn_gate', 'mlp.up_proj': 'ffn_up', 'mlp.down_proj': 'ffn_down',
  };
  if (!m || !layer[m[2]!]) throw new Error(`no GGUF name for tensor ${hf}`);
  return `blk.${m[1]}.${layer[m[2]!]}.weight`;
}

async function readBytes(t: NativeTensor): Promise<Buffer> {
  const fh = await open(t.path, 'r');
  try {
    const buf = Buffer.alloc(t.nbytes);
    const { bytesRead } = await fh.read(buf, 0, t.nbytes, t.offset);
    if (bytesRead !== t.nbytes) throw new Error(`${t.path}: short read of ${t.name}`);
    return buf;
  } finally {
    await fh.close();
  }
}

/** bf16 bytes → f32 bytes (exact). */
function bf16ToF32(src: Buffer): Buffer {
  const out = Buffer.alloc(src.length * 2);
  for (let i = 0; i < src.length / 2; i++) out.writeUInt32LE(src.readUInt16LE(2 * i) << 16 >>> 0, 4 * i);
  return out;
}

function tensorEntry(t: NativeTensor, weights: GgufWeights): GgufTensor {
  const ne = [...t.shape].reverse(); // row-major [out, in] → ggml [in, out]
  const srcType: GgmlTypeId = t.dtype === 'BF16' ? GgmlType.BF16 : t.dtype === 'F16' ? GgmlType.F16 : GgmlType.F32;
  const toF32 = ne.length === 1 && t.dtype === 'BF16';
  if (weights === 'q8_0' && ne.length === 2) {
    if (t.dtype !== 'BF16') throw new Error(`${t.name}: Q8_0 conversion reads BF16 matrices, not ${t.dtype}`);
    return { name: ggufTensorName(t.name), ne, type: GgmlType.Q8_0, data: async () => quantizeQ8_0(await readBytes(t), ne[0]!) };
  }
  return {
    name: ggufTensorName(t.name),
    ne,
    type: toF32 ? GgmlType.F32 : srcType,
    data: async () => (toF32 ? bf16ToF32(await readBytes(t)) : readBytes(t)),
  };
}

/**
 * SentencePiece vocabulary as llama.cpp's "llama" (SPM) tokenizer metadata, with exactly `vocabSize`
 * entries: llama.cpp sizes token_embd from the token list. Ids past the tokenizer are placeholders
 * (ERNIE's embedding table is padded the same way); a tokenizer larger than the model is cut.
 */
export function tokenizerKvs(sp: SpModel, vocabSize: number): GgufKv[] {
  const tokens: string[] = [];
  const scores = new Float32Array(vocabSize);
  const types = new Int32Array(vocabSize);
  for (let id = 0; id < vocabSize; id++) {
    const real = id < sp.pieces.length;
    tokens.push(real ? sp.pieces[id]! : `[PAD${id}]`);
    scores[id] = real ? sp.scores[id]! : 0;
    types[id] = real ? sp.types[id]! : SP_UNUSED;
  }
  const kvs: GgufKv[] = [
    { key: 'tokenizer.ggml.model', type: GgufType.STRING, value: 'llama' },
    { key: 'tokenizer.ggml.tokens', type: GgufType.ARRAY, itemType: GgufType.STRING, value: tokens },
    { key: 'tokenizer.ggml.scores', type: GgufType.ARRAY, itemType: GgufType.F32, value: scores },
    { key: 'tokenizer.ggml.token_type', type: GgufType.ARRAY, itemType: GgufType.I32, value: types },
    { key: 'tokenizer.ggml.unknown_token_id', type: GgufType.U32, value: sp.unkId },
    { key: 'tokenizer.ggml.add_space_prefix', type: GgufType.BOOL, value: sp.normalizer.addDummyPrefix },
    { key: 'tokenizer.ggml.add_bos_token', type: GgufType.BOOL, value: false }, // the chat template writes <s>
  ];
  if (sp.bosId >= 0) kvs.push({ key: 'tokenizer.ggml.bos_token_id', type: GgufType.U32, value: sp.bosId });
  if (sp.eosId >= 0) kvs.push({ key: 'tokenizer.ggml.eos_token_id', type: GgufType.U32, value: sp.eosId });
  if (sp.padId >= 0) kvs.push({ key: 'tokenizer.ggml.padding_token_id', type: GgufType.U32, value: sp.padId });
  return kvs;
}

/** Converts the checkpoint in `dir` (tokenizer: `tokenizerModel`, default dir/tokenizer.model). */
export async function convertToGguf(dir: string, outFile: string, tokenizerModel = path.join(dir, 'tokenizer.model'), weights: GgufWeights = 'bf16'): Promise<number> {
  const ck = await readCheckpoint(dir);
  const c = ck.config.native;
  if (!c.ropeInterleaved) throw new Error(`${dir}: ${ck.config.architecture} is not an ERNIE-4.5 (interleaved RoPE) checkpoint`);
  const sp = parseSpModel(await readFile(tokenizerModel));
  const u32 = (key: string, value: number): GgufKv => ({ key: `${ARCH}.${key}`, type: GgufType.U32, value });
  const f32 = (key: string, value: number): GgufKv => ({ key: `${ARCH}.${key}`, type: GgufType.F32, value });
  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufType.STRING, value: ARCH },
    { key: 'general.name', type: GgufType.STRING, value: `ernie-edge ${path.basename(dir)}` },
    { key: 'general.file_type', type: GgufType.U32, value: LLAMA_FTYPE[weights] },
    { key: 'general.alignment', type: GgufType.U32, value: 32 },
    u32('context_length', ck.config.maxPositionEmbeddings),
    u32('embedding_length', c.hiddenSize),
    u32('feed_forward_length', c.intermediateSize),
    u32('block_count', c.numLayers),
    u32('attention.head_count', c.numHeads),
    u32('attention.head_count_kv', c.numKvHeads),
    u32('attention.key_length', c.headDim), // head_dim 128 != hidden / heads (64) on the 0.3B shape
    u32('attention.value_length', c.headDim),
    u32('rope.dimension_count', c.headDim),
    f32('rope.freq_base', ck.config.ropeTheta),
    f32('attention.layer_norm_rms_epsilon', c.rmsNormEps),
    u32('vocab_size', c.vocabSize),
    ...tokenizerKvs(sp, c.vocabSize),
  ];
  // Table order: embeddings, per-layer tensors by layer, then the output norm (llama.cpp does not care).
  const key = (n: string) => {
    const m = /^model\.layers\.(\d+)\./.exec(n);
    return m ? 1 + Number(m[1]) : n === 'model.embed_tokens.weight' ? 0 : 1e9;
  };
  const tensors = [...ck.tensors].sort((a, b) => key(a.name) - key(b.name) || a.name.localeCompare(b.name)).map((t) => tensorEntry(t, weights));
  return writeGguf(outFile, kvs, tensors);
}

/** The GGUF of `dir`, converted once and kept beside the checkpoint (the name carries the converter version). */
export async function ensureGguf(dir: string, weights: GgufWeights = 'bf16'): Promise<string> {
  const file = path.join(dir, `model-${weights}.v1.gguf`);
  try {
    if ((await stat(file)).size > 0) return file;
  } catch {
    /* not converted yet */
  }
  await convertToGguf(dir, file, undefined, weights);
  return file;
}
