// Token ids packed after a JSON body, the payload of the REPLY_IDS message (./messages.ts):
//
//   [json length: u32 BE][json: UTF-8][zero padding to a multiple of 4][ids: int32 LE, to the end]
//
// Why: a TOKENIZE reply for a 4 MB prompt is millions of ids. As a JSON array it took the sidecar's main
// thread to stringify and the gateway's to parse and validate, seconds each on a loaded host, while
// every stream on those threads waited (issue #26). Packed, both ends copy bytes: on a little-endian
// host (all of ours) the decoded ids are a view of the frame's own payload, no copy at all.

import { FrameError } from './framing.js';

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Byte offset of the ids in a payload whose JSON part is `jsonBytes` long. */
const idsOffset = (jsonBytes: number) => (4 + jsonBytes + 3) & ~3;

export function packIds(json: Uint8Array, ids: Int32Array): Uint8Array {
  const parts = packedIdsParts(json, ids);
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts[0]!.length + parts[1]!.length);
  out.set(parts[0]!);
  out.set(parts[1]!, parts[0]!.length);
  return out;
}

/**
 * The same payload as the buffers to write in order: the header and JSON (padded), then, on a
 * little-endian host, a view of the ids' own memory. NOTE: packing copied millions of ids into a fresh
 * buffer on the sidecar's main thread (a fresh multi-megabyte allocation is page faults on top of the
 * copy), tens of ms in one stretch while every stream waited (bench/results/abuse-gap.json). The caller
 * must not change `ids` until the parts are written.
 */
export function packedIdsParts(json: Uint8Array, ids: Int32Array): Uint8Array[] {
  const at = idsOffset(json.length);
  const head = new Uint8Array(LITTLE_ENDIAN ? at : at + ids.length * 4);
  new DataView(head.buffer).setUint32(0, json.length, false);
  head.set(json, 4);
  if (LITTLE_ENDIAN) return ids.length === 0 ? [head] : [head, new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength)];
  const view = new DataView(head.buffer, at);
  for (let i = 0; i < ids.length; i++) view.setInt32(i * 4, ids[i]!, true);
  return [head];
}

/** The inverse of packIds. Throws FrameError when the layout does not add up. */
export function unpackIds(payload: Uint8Array): { json: Uint8Array; ids: Int32Array } {
  if (payload.length < 4) throw new FrameError('packed ids: payload shorter than its header');
  const jsonBytes = new DataView(payload.buffer, payload.byteOffset, 4).getUint32(0, false);
  const at = idsOffset(jsonBytes);
  if (at > payload.length || (payload.length - at) % 4 !== 0) throw new FrameError('packed ids: lengths do not add up');
  const json = payload.subarray(4, 4 + jsonBytes);
  const n = (payload.length - at) / 4;
  if (LITTLE_ENDIAN && (payload.byteOffset + at) % 4 === 0) return { json, ids: new Int32Array(payload.buffer, payload.byteOffset + at, n) };
  const ids = new Int32Array(n);
  const view = new DataView(payload.buffer, payload.byteOffset + at, n * 4);
  for (let i = 0; i < n; i++) ids[i] = view.getInt32(i * 4, true);
  return { json, ids };
}
