// ggml's Q8_0 (the format of llama.cpp's `--outtype q8_0` / `llama-quantize ... Q8_0`) from bf16 rows,
// for the llama.cpp side of the CPU benchmark: the very weights our engine runs, quantized the way
// llama.cpp quantizes them. Blocks of 32 along a row: d = amax / 127 stored as f16, q = round(x / d)
// as int8, 34 bytes per block (ggml-common.h's block_q8_0).
// NOTE: written here, not run through llama.cpp's quantizer: the benchmark's llama.cpp comes from npm
// as a prebuilt library without its tools, and the rule is short. It follows ggml's reference
// quantize_row_q8_0_ref step by step in f32 (id = 1/d from the f32 d, roundf: halves away from zero).

const QK8_0 = 32;
export const Q8_0_BLOCK_BYTES = 34;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** f32 → IEEE f16 bits, round to nearest even (as GGML_FP32_TO_FP16 on x86 with F16C). */
export function f32ToF16(x: number): number {
  f32[0] = x;
  const b = u32[0]!;
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf / nan
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow to inf
  if (e <= 0) {
    // subnormal f16 (or zero): shift the full mantissa into place, rounding to nearest even
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mant & ((1 << shift) - 1);
    let m = mant >>> shift;
    if (rest > half || (rest === half && m & 1)) m++;
    return sign | m;
  }
  const rest = mant & 0x1fff;
  let m = mant >>> 13;
  if (rest > 0x1000 || (rest === 0x1000 && m & 1)) {
    m++;
    if (m === 0x400) {
      m = 0;
      e++;
    }
    if (e >= 0x1f) return sign | 0x7c00;
  }
  return sign | (e << 10) | m;
}

const fr = Math.fround;
const roundf = (v: number) => (v < 0 ? -Math.round(-v) : Math.round(v)); // C roundf: halves away from zero

/** bf16 bytes of a [rows, k] matrix (k a multiple of 32) → Q8_0 bytes, row by row. */
export function quantizeQ8_0(bf16: Uint8Array, k: number): Buffer {
  if (k % QK8_0 !== 0) throw new Error(`Q8_0 needs rows of a multiple of 32 values, not ${k}`);
  const n = bf16.length / 2;
  const src = new Uint16Array(bf16.buffer, bf16.byteOffset, n);
  const out = Buffer.alloc((n / QK8_0) * Q8_0_BLOCK_BYTES);
  const x = new Float32Array(QK8_0);
  const xb = new Uint32Array(x.buffer);
  for (let b = 0; b < n / QK8_0; b++) {
    let amax = 0;
    for (let j = 0; j < QK8_0; j++) {
      xb[j] = src[b * QK8_0 + j]! << 16; // bf16 → f32: the top half
      amax = Math.max(amax, Math.abs(x[j]!));
    }
    const d = fr(amax / 127);
    const id = d ? fr(1 / d) : 0;
    const at = b * Q8_0_BLOCK_BYTES;
    out.writeUInt16LE(f32ToF16(d), at);
    for (let j = 0; j < QK8_0; j++) out.writeInt8(roundf(fr(x[j]! * id)), at + 2 + j);
  }
  return out;
}
