// Length-prefixed frames: the byte layer of the engine protocol.
//
// Frame layout (big endian):   [type: u8][length: u32][payload: length bytes]
// `type` is a MsgType byte (./messages.ts); the payload is opaque here. Runtime-agnostic: Uint8Array only.
//
// The decoder is streaming: feed it whatever chunks the transport delivers (split anywhere, several
// frames per chunk, one byte at a time) and it yields whole frames. A frame whose declared length is
// past `maxFrameBytes` is rejected as soon as its 5-byte header is seen, before any payload is buffered,
// so a hostile or corrupt peer cannot make us allocate gigabytes.

export const FRAME_HEADER_BYTES = 5;
/** Default cap on one frame's payload. A long prompt as token ids is ~1 MB of JSON; 16 MiB is generous. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

export interface Frame {
  type: number;
  payload: Uint8Array;
}

export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FrameError';
  }
}

export function encodeFrame(type: number, payload: Uint8Array, maxFrameBytes = DEFAULT_MAX_FRAME_BYTES): Uint8Array {
  const header = frameHeader(type, payload.length, maxFrameBytes);
  const out = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  out.set(header);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/** Payloads past this are written as header and payload (two writes), not copied into one frame. */
export const SPLIT_FRAME_BYTES = 64 * 1024;

/**
 * The frame as the buffers to write in order: one (header and payload together) for small payloads;
 * for large ones the header, then the payload itself (a payload given as parts: each part, uncopied). NOTE: copying a multi-megabyte payload into a
 * frame buffer was a whole pass of its own on the thread that serves every stream.
 */
export function encodeFrameParts(type: number, payload: Uint8Array | Uint8Array[], maxFrameBytes = DEFAULT_MAX_FRAME_BYTES): Uint8Array[] {
  const parts = Array.isArray(payload) ? payload : [payload];
  let length = 0;
  for (const p of parts) length += p.length;
  if (length > SPLIT_FRAME_BYTES) return [frameHeader(type, length, maxFrameBytes), ...parts];
  if (parts.length === 1) return [encodeFrame(type, parts[0]!, maxFrameBytes)];
  const out = new Uint8Array(FRAME_HEADER_BYTES + length);
  out.set(frameHeader(type, length, maxFrameBytes));
  let at = FRAME_HEADER_BYTES;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return [out];
}

/**
 * Writes a frame's parts in order, all in this synchronous stretch so nothing comes between them;
 * settles as the last write does (an earlier part's failure is that one's too).
 */
export function writeParts(write: (bytes: Uint8Array) => Promise<void>, parts: Uint8Array[]): Promise<void> {
  let last: Promise<void> = Promise.resolve();
  for (const part of parts) {
    last.catch(() => undefined);
    last = write(part);
  }
  return last;
}

function frameHeader(type: number, length: number, maxFrameBytes: number): Uint8Array {
  if (!Number.isInteger(type) || type < 0 || type > 0xff) throw new FrameError(`bad frame type ${type}`);
  if (length > maxFrameBytes) throw new FrameError(`frame of ${length} bytes exceeds the ${maxFrameBytes}-byte limit`);
  const out = new Uint8Array(FRAME_HEADER_BYTES);
  out[0] = type;
  new DataView(out.buffer).setUint32(1, length, false);
  return out;
}

/**
 * Streaming decoder. `push` returns the frames completed by this chunk, in order. After it throws a
 * FrameError the stream is unrecoverable (framing is lost) and the caller must drop the connection.
 */
export class FrameDecoder {
  // Header bytes seen so far for the frame being read.
  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFill = 0;
  // Payload buffer, allocated at its exact size once the header is complete.
  private payload: Uint8Array | null = null;
  private payloadFill = 0;
  private type = 0;
  private failed = false;

  /**
   * The cap checked against each frame header from now on. The server keeps it small until the peer has
   * authenticated (serve-engine.ts), so an unauthenticated peer cannot make it allocate a large payload.
   */
  maxFrameBytes: number;

  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.maxFrameBytes = maxFrameBytes;
  }

  push(chunk: Uint8Array): Frame[] {
    if (this.failed) throw new FrameError('decoder already failed');
    const frames: Frame[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.payload === null) {
        const take = Math.min(FRAME_HEADER_BYTES - this.headerFill, chunk.length - pos);
        this.header.set(chunk.subarray(pos, pos + take), this.headerFill);
        this.headerFill += take;
        pos += take;
        if (this.headerFill < FRAME_HEADER_BYTES) break;
        this.type = this.header[0]!;
        const len = new DataView(this.header.buffer).getUint32(1, false);
        if (len > this.maxFrameBytes) {
          this.failed = true;
          throw new FrameError(`incoming frame of ${len} bytes exceeds the ${this.maxFrameBytes}-byte limit`);
        }
        this.payload = new Uint8Array(len);
        this.payloadFill = 0;
      }
      const take = Math.min(this.payload.length - this.payloadFill, chunk.length - pos);
      this.payload.set(chunk.subarray(pos, pos + take), this.payloadFill);
      this.payloadFill += take;
      pos += take;
      if (this.payloadFill === this.payload.length) {
        frames.push({ type: this.type, payload: this.payload });
        this.payload = null;
        this.headerFill = 0;
      }
    }
    return frames;
  }

  /** True when no partial frame is buffered (a clean point to close). */
  get idle(): boolean {
    return this.payload === null && this.headerFill === 0;
  }
}
