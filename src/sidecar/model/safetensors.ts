// Reads safetensors headers (the JSON part) and checks them, so that the native engine only ever
// receives validated (name, file, dtype, shape, byte range) records. Format: an 8-byte
// little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]},
// "__metadata__"?: {...}}, then the data; offsets are relative to the end of the header.
import { open } from 'node:fs/promises';
import type { NativeDType, NativeTensor } from '../native.js';

export class CheckpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointError';
  }
}

const DTYPE_SIZE: Record<string, number> = { BF16: 2, F16: 2, F32: 4 };
const MAX_HEADER = 100 * 1024 * 1024; // the format's own limit

export async function readSafetensorsHeader(file: string): Promise<NativeTensor[]> {
  let fh;
  try {
    fh = await open(file, 'r');
  } catch (e) {
    throw new CheckpointError(`${file}: cannot open: ${(e as Error).message}`);
  }
  try {
    const size = (await fh.stat()).size;
    if (size < 8) throw new CheckpointError(`${file}: truncated: ${size} bytes, no safetensors header`);
    const lenBuf = Buffer.alloc(8);
    await fh.read(lenBuf, 0, 8, 0);
    const n = lenBuf.readBigUInt64LE(0);
    if (n === 0n || n > BigInt(MAX_HEADER) || n > BigInt(size - 8))
      throw new CheckpointError(`${file}: corrupt: header length ${n} does not fit the file (${size} bytes)`);
    const hdr = Buffer.alloc(Number(n));
    await fh.read(hdr, 0, hdr.length, 8);
    let json: unknown;
    try {
      json = JSON.parse(hdr.toString('utf8'));
    } catch (e) {
      throw new CheckpointError(`${file}: corrupt: header is not valid JSON (${(e as Error).message})`);
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw new CheckpointError(`${file}: corrupt: header is not a JSON object`);
    const dataStart = 8 + Number(n);
    const dataLen = size - dataStart;
    const out: NativeTensor[] = [];
    for (const [name, v] of Object.entries(json as Record<string, unknown>)) {
      if (name === '__metadata__') continue;
      out.push(parseEntry(file, name, v, dataStart, dataLen));
    }
    checkOverlaps(file, out, dataStart);
    return out;
  } finally {
    await fh.close();
  }
}

function parseEntry(file: string, name: string, v: unknown, dataStart: number, dataLen: number): NativeTensor {
  const bad = (why: string) => new CheckpointError(`${file}: tensor '${name}': ${why}`);
  if (typeof v !== 'object' || v === null) throw bad('entry is not an object');
  const { dtype, shape, data_offsets: offs } = v as Record<string, unknown>;
  if (typeof dtype !== 'string') throw bad('missing dtype');
  if (!(dtype in DTYPE_SIZE)) throw bad(`unsupported dtype ${dtype} (supported: BF16, F16, F32)`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
    throw bad('shape must be a list of non-negative integers');
  if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((d) => Number.isSafeInteger(d) && d >= 0))
    throw bad('data_offsets must be [begin, end]');
  const [begin, end] = offs as [number, number];
  const numel = (shape as number[]).reduce((a, b) => a * b, 1);
  const nbytes = numel * DTYPE_SIZE[dtype]!;
  if (end < begin || end - begin !== nbytes)
    throw bad(`data_offsets [${begin}, ${end}] hold ${end - begin} bytes but shape [${shape}] in ${dtype} needs ${nbytes}`);
  if (end > dataLen)
    throw bad(`data_offsets end ${end} lies past the end of the data (${dataLen} bytes): truncated or corrupt file`);
  return { name, path: file, dtype: dtype as NativeDType, shape: shape as number[], offset: dataStart + begin, nbytes };
}

function checkOverlaps(file: string, ts: NativeTensor[], dataStart: number): void {
  const sorted = [...ts].filter((t) => t.nbytes > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (cur.offset < prev.offset + prev.nbytes)
      throw new CheckpointError(
        `${file}: corrupt: tensors '${prev.name}' and '${cur.name}' overlap at byte ${cur.offset - dataStart} of the data`,
      );
  }
}

/** Writes a safetensors file: tensors in the given order, bf16 payloads (Buffers) back to back. */
export function safetensorsHeader(
  entries: { name: string; dtype: NativeDType; shape: number[]; nbytes: number }[],
  metadata: Record<string, string> = {},
): Buffer {
  const obj: Record<string, unknown> = { __metadata__: metadata };
  let off = 0;
  for (const e of entries) {
    obj[e.name] = { dtype: e.dtype, shape: e.shape, data_offsets: [off, off + e.nbytes] };
    off += e.nbytes;
  }
  let json = JSON.stringify(obj);
  // Pad with spaces so the data starts 8-byte aligned, as the reference writer does.
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([head, Buffer.from(json, 'utf8')]);
}
