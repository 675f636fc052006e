// The benchmark's GGUF writer (bench/llama/gguf.ts) and ERNIE converter (bench/llama/convert.ts), read
// back by an independent little GGUF reader written from the format description (not from the writer).
// Needs no llama.cpp: node-llama-cpp loading the 0.3B file is checked by `npm run bench:engine`.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertToGguf } from '../../bench/llama/convert.js';
import { GgmlType, GgufType, writeGguf } from '../../bench/llama/gguf.js';
import { f32ToF16, quantizeQ8_0 } from '../../bench/llama/q8_0.js';
import { readSafetensorsHeader } from '../../src/sidecar/model/safetensors.js';

interface ReadTensor { name: string; ne: bigint[]; type: number; offset: bigint }
interface ReadGguf { version: number; kv: Map<string, { type: number; value: unknown }>; tensors: ReadTensor[]; dataStart: number }

/** GGUF v3: magic, version, counts, key/values, tensor infos, padding to general.alignment (default 32). */
function readGguf(buf: Buffer): ReadGguf {
  let p = 0;
  const u32 = () => ((p += 4), buf.readUInt32LE(p - 4));
  const u64 = () => ((p += 8), buf.readBigUInt64LE(p - 8));
  const str = () => {
    const n = Number(u64());
    return ((p += n), buf.toString('utf8', p - n, p));
  };
  const readers: Record<number, () => unknown> = {
    0: () => buf.readUInt8(p++), 1: () => buf.readInt8(p++),
    2: () => ((p += 2), buf.readUInt16LE(p - 2)), 3: () => ((p += 2), buf.readInt16LE(p - 2)),
    4: u32, 5: () => ((p += 4), buf.readInt32LE(p - 4)), 6: () => ((p += 4), buf.readFloatLE(p - 4)),
    7: () => buf.readUInt8(p++) !== 0, 8: str, 10: u64, 11: () => ((p += 8), buf.readBigInt64LE(p - 8)),
    12: () => ((p += 8), buf.readDoubleLE(p - 8)),
  };
  const value = (t: number): unknown => {
    if (t !== 9) return readers[t]!();
    const it = u32();
    const n = Number(u64());
    return Array.from({ length: n }, () => value(it));
  };
  expect(buf.toString('ascii', 0, 4)).toBe('GGUF');
  p = 4;
  const version = u32();
  const nTensors = Number(u64());
  const nKv = Number(u64());
  const kv = new Map<string, { type: number; value: unknown }>();
  for (let i = 0; i < nKv; i++) {
    const key = str();
    const type = u32();
    kv.set(key, { type, value: value(type) });
  }
  const tensors: ReadTensor[] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const ne = Array.from({ length: u32() }, u64);
    tensors.push({ name, ne, type: u32(), offset: u64() });
  }
  const align = Number(kv.get('general.alignment')?.value ?? 32);
  return { version, kv, tensors, dataStart: Math.ceil(p / align) * align };
}

const fixtures = fileURLToPath(new URL('../fixtures/golden', import.meta.url));
let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gguf-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeGguf', () => {
  it('writes every metadata type, the tensor table and aligned data', async () => {
    const file = path.join(dir, 'types.gguf');
    const kvs = [
      { key: 'u8', type: GgufType.U8, value: 200 }, { key: 'i8', type: GgufType.I8, value: -5 },
      { key: 'u16', type: GgufType.U16, value: 60000 }, { key: 'i16', type: GgufType.I16, value: -300 },
      { key: 'u32', type: GgufType.U32, value: 4e9 }, { key: 'i32', type: GgufType.I32, value: -7 },
      { key: 'f32', type: GgufType.F32, value: 1.5 }, { key: 'bool', type: GgufType.BOOL, value: true },
      { key: 'str', type: GgufType.STRING, value: 'ünïcode' }, { key: 'u64', type: GgufType.U64, value: 2n ** 40n },
      { key: 'i64', type: GgufType.I64, value: -(2n ** 40n) }, { key: 'f64', type: GgufType.F64, value: Math.PI },
      { key: 'arr', type: GgufType.ARRAY, itemType: GgufType.STRING, value: ['a', 'bc'] },
    ] as const;
    const a = new Uint8Array(3 * 2 * 2).map((_, i) => i + 1); // ne [3, 2] bf16: 12 bytes, padded to 32
    const b = new Uint8Array(4 * 5).fill(7); // [5] f32
    const size = await writeGguf(file, [...kvs], [
      { name: 'a', ne: [3, 2], type: GgmlType.BF16, data: () => a },
      { name: 'b', ne: [5], type: GgmlType.F32, data: () => b },
    ]);
    const buf = await readFile(file);
    expect(buf.length).toBe(size);
    const g = readGguf(buf);
    expect(g.version).toBe(3);
    expect([...g.kv.entries()].map(([k, v]) => [k, v.value])).toEqual([
      ['u8', 200], ['i8', -5], ['u16', 60000], ['i16', -300], ['u32', 4e9], ['i32', -7], ['f32', 1.5], ['bool', true],
      ['str', 'ünïcode'], ['u64', 2n ** 40n], ['i64', -(2n ** 40n)], ['f64', Math.PI], ['arr', ['a', 'bc']],
    ]);
    expect(g.tensors).toEqual([
      { name: 'a', ne: [3n, 2n], type: 30, offset: 0n },
      { name: 'b', ne: [5n], type: 0, offset: 32n },
    ]);
    expect(g.dataStart % 32).toBe(0);
    expect([...buf.subarray(g.dataStart, g.dataStart + 12)]).toEqual([...a]);
    expect([...buf.subarray(g.dataStart + 12, g.dataStart + 32)]).toEqual(new Array(20).fill(0));
    expect([...buf.subarray(g.dataStart + 32, g.dataStart + 52)]).toEqual([...b]);
  });

  it('refuses data of the wrong size', async () => {
    await expect(writeGguf(path.join(dir, 'bad.gguf'), [], [{ name: 'x', ne: [4], type: GgmlType.F32, data: () => new Uint8Array(15) }]))
      .rejects.toThrow(/15 bytes/);
  });
});

describe('convertToGguf (tiny ERNIE-4.5 checkpoint)', () => {
  let g: ReadGguf;
  let buf: Buffer;
  beforeAll(async () => {
    const file = path.join(dir, 'tiny.gguf');
    await convertToGguf(path.join(fixtures, 'tiny'), file, path.join(fixtures, 'tokenizer/tokenizer.model'));
    buf = await readFile(file);
    g = readGguf(buf);
  });
  const kv = (k: string) => g.kv.get(k)?.value;

  it("carries llama.cpp's ernie4_5 hyperparameters", () => {
    expect(kv('general.architecture')).toBe('ernie4_5');
    expect(kv('general.file_type')).toBe(32);
    expect({
      ctx: kv('ernie4_5.context_length'), embd: kv('ernie4_5.embedding_length'), ff: kv('ernie4_5.feed_forward_length'),
      blocks: kv('ernie4_5.block_count'), heads: kv('ernie4_5.attention.head_count'), kvHeads: kv('ernie4_5.attention.head_count_kv'),
      k: kv('ernie4_5.attention.key_length'), v: kv('ernie4_5.attention.value_length'), rot: kv('ernie4_5.rope.dimension_count'),
      theta: kv('ernie4_5.rope.freq_base'),
    }).toEqual({ ctx: 4096, embd: 256, ff: 512, blocks: 2, heads: 16, kvHeads: 2, k: 128, v: 128, rot: 128, theta: 500000 });
    expect(kv('ernie4_5.attention.layer_norm_rms_epsilon')).toBeCloseTo(1e-5, 10);
    expect(g.kv.get('ernie4_5.rope.freq_base')?.type).toBe(GgufType.F32);
  });

  it('carries the SentencePiece vocabulary cut to the model vocab (2048)', () => {
    const tokens = kv('tokenizer.ggml.tokens') as string[];
    const types = kv('tokenizer.ggml.token_type') as number[];
    expect(kv('tokenizer.ggml.model')).toBe('llama');
    expect(tokens).toHaveLength(2048);
    expect((kv('tokenizer.ggml.scores') as number[]).length).toBe(2048);
    expect(tokens.slice(0, 3)).toEqual(['<unk>', '<s>', '</s>']);
    expect(types.slice(0, 3)).toEqual([2, 3, 3]); // unknown, control, control
    const byteA = tokens.indexOf('<0x41>');
    expect(byteA).toBeGreaterThan(0);
    expect(types[byteA]).toBe(6); // byte
    expect([kv('tokenizer.ggml.bos_token_id'), kv('tokenizer.ggml.eos_token_id'), kv('tokenizer.ggml.unknown_token_id')]).toEqual([1, 2, 0]);
  });

  it("names, shapes and types tensors as llama.cpp's loader expects, at aligned offsets", async () => {
    const src = await readSafetensorsHeader(path.join(fixtures, 'tiny/model.safetensors'));
    expect(g.tensors).toHaveLength(src.length); // tied embeddings: no output.weight
    const by = new Map(g.tensors.map((t) => [t.name, t]));
    expect(by.get('token_embd.weight')).toMatchObject({ ne: [256n, 2048n], type: 30 });
    expect(by.get('output_norm.weight')).toMatchObject({ ne: [256n], type: 0 });
    expect(by.get('blk.1.attn_q.weight')).toMatchObject({ ne: [256n, 2048n], type: 30 });
    expect(by.get('blk.1.attn_k.weight')).toMatchObject({ ne: [256n, 256n], type: 30 });
    expect(by.get('blk.0.attn_output.weight')).toMatchObject({ ne: [2048n, 256n], type: 30 });
    expect(by.get('blk.0.ffn_down.weight')).toMatchObject({ ne: [512n, 256n], type: 30 });
    expect(by.get('blk.0.ffn_norm.weight')).toMatchObject({ ne: [256n], type: 0 });
    expect(g.tensors[0]!.name).toBe('token_embd.weight');
    let end = 0n;
    for (const t of g.tensors) {
      expect(t.offset % 32n).toBe(0n);
      expect(t.offset >= end).toBe(true);
      end = t.offset + t.ne.reduce((a, b) => a * b, 1n) * (t.type === 0 ? 4n : 2n);
    }
    expect(BigInt(buf.length) >= BigInt(g.dataStart) + end).toBe(true);
  });

  it('copies bf16 matrices byte for byte and widens norm weights exactly to f32', async () => {
    const file = path.join(fixtures, 'tiny/model.safetensors');
    const src = new Map((await readSafetensorsHeader(file)).map((t) => [t.name, t]));
    const raw = await readFile(file);
    const bytes = (hf: string) => raw.subarray(src.get(hf)!.offset, src.get(hf)!.offset + src.get(hf)!.nbytes);
    const at = (name: string, n: number) => {
      const t = g.tensors.find((x) => x.name === name)!;
      return buf.subarray(g.dataStart + Number(t.offset), g.dataStart + Number(t.offset) + n);
    };
    const q = bytes('model.layers.1.self_attn.q_proj.weight');
    expect(Buffer.compare(at('blk.1.attn_q.weight', q.length), q)).toBe(0);
    const emb = bytes('model.embed_tokens.weight');
    expect(Buffer.compare(at('token_embd.weight', emb.length), emb)).toBe(0);
    const norm = bytes('model.layers.0.post_attention_layernorm.weight');
    const f32 = at('blk.0.ffn_norm.weight', norm.length * 2);
    for (let i = 0; i < norm.length / 2; i++) expect(f32.readUInt32LE(4 * i)).toBe((norm.readUInt16LE(2 * i) << 16) >>> 0);
  });
});

describe('Q8_0 (bench/llama/q8_0.ts) and the q8_0 conversion', () => {
  it('writes f16 scales rounded to nearest even, subnormals and overflow included', () => {
    expect([1, -2, 65504, 65520, 1 / 3, 2 ** -24, 2 ** -25, 3 * 2 ** -25, 0].map(f32ToF16)).toEqual([
      0x3c00, 0xc000, 0x7bff, 0x7c00, 0x3555, 0x0001, 0x0000, 0x0002, 0x0000,
    ]);
  });

  it('quantizes each block of 32 to round(x / (amax / 127)), halves away from zero', () => {
    // Two blocks: 0..31 scaled so that amax / 127 = 0.25 exactly, and an all-zero block.
    const vals = [...Array.from({ length: 32 }, (_, j) => (j - 16) * 1.0), ...new Array<number>(32).fill(0)];
    vals[31] = 31.75; // amax: d = 0.25
    const bf = Buffer.alloc(vals.length * 2);
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    vals.forEach((v, i) => ((f[0] = v), bf.writeUInt16LE(u[0]! >>> 16, 2 * i)));
    const q = quantizeQ8_0(bf, 32);
    expect(q.length).toBe(2 * 34);
    expect(q.readUInt16LE(0)).toBe(0x3400); // f16(0.25)
    expect(q.readInt8(2)).toBe(-64); // -16 / 0.25
    expect(q.readInt8(2 + 31)).toBe(127);
    expect(q.readUInt16LE(34)).toBe(0); // d = 0: every q 0
    expect([...q.subarray(36, 68)].every((b) => b === 0)).toBe(true);
    expect(() => quantizeQ8_0(Buffer.alloc(40), 20)).toThrow(/multiple of 32/);
  });

  it('converts the tiny checkpoint with every matrix Q8_0 (ftype 7), dequantizing within half a step', async () => {
    const file = path.join(dir, 'tiny-q8.gguf');
    await convertToGguf(path.join(fixtures, 'tiny'), file, path.join(fixtures, 'tokenizer/tokenizer.model'), 'q8_0');
    const b = await readFile(file);
    const q = readGguf(b);
    expect(q.kv.get('general.file_type')?.value).toBe(7);
    const by = new Map(q.tensors.map((t) => [t.name, t]));
    expect(by.get('token_embd.weight')).toMatchObject({ ne: [256n, 2048n], type: GgmlType.Q8_0 });
    expect(by.get('blk.0.ffn_down.weight')).toMatchObject({ ne: [512n, 256n], type: GgmlType.Q8_0 });
    expect(by.get('blk.0.ffn_norm.weight')).toMatchObject({ ne: [256n], type: 0 });
    // blk.1.attn_q row 0 against the source bf16 values: |x - d q| <= d / 2 (+ the f16 rounding of d).
    const src = new Map((await readSafetensorsHeader(path.join(fixtures, 'tiny/model.safetensors'))).map((t) => [t.name, t]));
    const raw = await readFile(path.join(fixtures, 'tiny/model.safetensors'));
    const s = src.get('model.layers.1.self_attn.q_proj.weight')!;
    const t = by.get('blk.1.attn_q.weight')!;
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    const f16 = (h: number) => (h & 0x7c00 ? 2 ** (((h >> 10) & 0x1f) - 15) * (1 + (h & 0x3ff) / 1024) : 2 ** -14 * ((h & 0x3ff) / 1024)) * (h & 0x8000 ? -1 : 1);
    for (let blk = 0; blk < 8; blk++) {
      const at = q.dataStart + Number(t.offset) + blk * 34;
      const d = f16(b.readUInt16LE(at));
      for (let j = 0; j < 32; j++) {
        u[0] = raw.readUInt16LE(s.offset + 2 * (blk * 32 + j)) << 16;
        expect(Math.abs(f[0]! - d * b.readInt8(at + 2 + j))).toBeLessThanOrEqual(d / 2 + Math.abs(f[0]!) * 2 ** -10);
      }
    }
  });
});
