// A minimal GGUF (version 3) writer: typed metadata, a tensor table, aligned tensor data.
// NOTE: hand-written because npm has no maintained GGUF *writer* for JavaScript (checked: @huggingface/gguf
// and hyllama only read); the format is small enough that a writer is ~150 lines.
//
// File layout (all integers little-endian):
//   u32 magic "GGUF" | u32 version = 3 | u64 tensor count | u64 metadata count
//   metadata: { string key, u32 value type, value }*      string = u64 byte length + UTF-8 bytes
//             array value = u32 item type + u64 count + items
//   tensor table: { string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset }*
//             ne[0] is the innermost (contiguous) dimension: the reverse of a row-major (PyTorch) shape;
//             offset is relative to the data section and a multiple of `general.alignment`
//   zero padding up to the alignment, then the data section (each tensor padded to the alignment).
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { rename } from 'node:fs/promises';

/** GGUF metadata value types (the numbers stored in the file). */
export const GgufType = {
  U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10, I64: 11, F64: 12,
} as const;
export type GgufScalar = Exclude<(typeof GgufType)[keyof typeof GgufType], 9>;

/** The ggml tensor types this writer is used with (ggml.h's enum ggml_type), and their block sizes. */
export const GgmlType = { F32: 0, F16: 1, Q8_0: 8, BF16: 30 } as const;
export type GgmlTypeId = (typeof GgmlType)[keyof typeof GgmlType];
// [elements per block, bytes per block] (ggml's type traits); Q8_0: an f16 scale + 32 int8 (block_q8_0).
const GGML_BLOCK: Record<GgmlTypeId, [number, number]> = { 0: [1, 4], 1: [1, 2], 8: [32, 34], 30: [1, 2] };

export type GgufValue = number | bigint | boolean | string;
export type GgufKv =
  | { key: string; type: GgufScalar; value: GgufValue }
  | { key: string; type: typeof GgufType.ARRAY; itemType: GgufScalar; value: ArrayLike<GgufValue> };

export interface GgufTensor {
  name: string;
  ne: number[]; // ggml order: ne[0] innermost
  type: GgmlTypeId;
  /** Produces exactly nbytes(ne, type) bytes; called once, in table order, while the file is written. */
  data: () => Promise<Uint8Array> | Uint8Array;
}

export const DEFAULT_ALIGNMENT = 32; // GGUF's default when general.alignment is absent

/** Bytes of a tensor; a block type needs ne[0] (the row) to be a whole number of blocks. */
export function tensorBytes(ne: number[], type: GgmlTypeId): number {
  const [per, bytes] = GGML_BLOCK[type];
  if (ne[0]! % per !== 0) throw new Error(`ggml type ${type}: row of ${ne[0]} is not a multiple of ${per}`);
  return (ne.reduce((a, b) => a * b, 1) / per) * bytes;
}
export const alignUp = (n: number, a: number): number => Math.ceil(n / a) * a;

/** Growable little-endian byte buffer for the header. */
class Bytes {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private room(n: number): number {
    if (this.length + n > this.buf.length) {
      const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
      this.buf.copy(next, 0, 0, this.length);
      this.buf = next;
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  // NOTE: room() may replace this.buf, so it runs before this.buf is read.
  private at(n: number): [Buffer, number] {
    const at = this.room(n);
    return [this.buf, at];
  }
  u32(v: number): void { const [b, at] = this.at(4); b.writeUInt32LE(v, at); }
  u64(v: number | bigint): void { const [b, at] = this.at(8); b.writeBigUInt64LE(BigInt(v), at); }
  str(s: string): void {
    const src = Buffer.from(s, 'utf8');
    this.u64(src.length);
    const [b, at] = this.at(src.length);
    src.copy(b, at);
  }
  scalar(type: GgufScalar, v: GgufValue): void {
    const n = Number(v);
    const w = (size: number, put: (b: Buffer, at: number) => void) => put(...this.at(size));
    switch (type) {
      case GgufType.U8: return w(1, (b, at) => b.writeUInt8(n, at));
      case GgufType.I8: return w(1, (b, at) => b.writeInt8(n, at));
      case GgufType.U16: return w(2, (b, at) => b.writeUInt16LE(n, at));
      case GgufType.I16: return w(2, (b, at) => b.writeInt16LE(n, at));
      case GgufType.U32: return w(4, (b, at) => b.writeUInt32LE(n, at));
      case GgufType.I32: return w(4, (b, at) => b.writeInt32LE(n, at));
      case GgufType.F32: return w(4, (b, at) => b.writeFloatLE(n, at));
      case GgufType.BOOL: return w(1, (b, at) => b.writeUInt8(v ? 1 : 0, at));
      case GgufType.STRING: return this.str(String(v));
      case GgufType.U64: return w(8, (b, at) => b.writeBigUInt64LE(BigInt(v), at));
      case GgufType.I64: return w(8, (b, at) => b.writeBigInt64LE(BigInt(v), at));
      case GgufType.F64: return w(8, (b, at) => b.writeDoubleLE(n, at));
    }
  }
  pad(a: number): void { this.room(alignUp(this.length, a) - this.length); } // Buffer.alloc is zeroed
  bytes(): Buffer { return this.buf.subarray(0, this.length); }
}

/** Header bytes (through the padding before the data section) and each tensor's data offset. */
export function ggufHeader(kvs: GgufKv[], tensors: Omit<GgufTensor, 'data'>[], alignment = DEFAULT_ALIGNMENT): { header: Buffer; offsets: number[] } {
  const align = kvs.find((kv) => kv.key === 'general.alignment');
  if (align && Number(align.value) !== alignment) throw new Error(`general.alignment ${String(align.value)} != ${alignment}`);
  const b = new Bytes();
  b.u32(0x46554747); // "GGUF" read as a little-endian u32
  b.u32(3);
  b.u64(tensors.length);
  b.u64(kvs.length);
  for (const kv of kvs) {
    b.str(kv.key);
    b.u32(kv.type);
    if (kv.type === GgufType.ARRAY) {
      b.u32(kv.itemType);
      b.u64(kv.value.length);
      for (let i = 0; i < kv.value.length; i++) b.scalar(kv.itemType, kv.value[i]!);
    } else b.scalar(kv.type, kv.value);
  }
  const offsets: number[] = [];
  let off = 0;
  for (const t of tensors) {
    b.str(t.name);
    b.u32(t.ne.length);
    for (const d of t.ne) b.u64(d);
    b.u32(t.type);
    b.u64(off);
    offsets.push(off);
    off = alignUp(off + tensorBytes(t.ne, t.type), alignment);
  }
  b.pad(alignment);
  return { header: b.bytes(), offsets };
}

/** Writes a GGUF file (via a temporary name, renamed when complete). Returns its size in bytes. */
export async function writeGguf(file: string, kvs: GgufKv[], tensors: GgufTensor[], alignment = DEFAULT_ALIGNMENT): Promise<number> {
  const { header } = ggufHeader(kvs, tensors, alignment);
  const tmp = `${file}.tmp-${process.pid}`;
  const out = createWriteStream(tmp);
  let size = 0;
  const put = async (chunk: Uint8Array) => {
    size += chunk.length;
    if (!out.write(chunk)) await once(out, 'drain');
  };
  try {
    await put(header);
    for (const t of tensors) {
      const data = await t.data();
      const want = tensorBytes(t.ne, t.type);
      if (data.length !== want) throw new Error(`${t.name}: ${data.length} bytes, shape [${t.ne}] needs ${want}`);
      await put(data);
      const pad = alignUp(want, alignment) - want;
      if (pad) await put(new Uint8Array(pad));
    }
    out.end();
    await once(out, 'finish');
  } catch (e) {
    out.destroy();
    throw e;
  }
  await rename(tmp, file);
  return size;
}
