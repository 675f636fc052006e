// FrameCodec: the engine protocol's encode and decode of large inputs, done off the calling thread.
//
// A multi-megabyte prompt is a few whole-payload passes: JSON.stringify and UTF-8 encode on the gateway,
// UTF-8 decode, JSON.parse and the schema check on the sidecar. Each one held, for tens of milliseconds,
// the event loop that delivers every other stream's tokens (issue #26). A runtime with threads (Node:
// src/cli/off-thread-codec.ts) injects a codec that runs those passes in a worker; what is left on the
// serving thread is handing the bytes over (a transfer) and taking the result back (a structured clone,
// which copies a string's characters in one block: a memcpy, not a pass that looks at each of them).
// Without a codec (Workers, tests) everything stays on the calling thread, as before.
//
// Contract: encode(type, body) yields exactly the parts encodeMessageParts(type, body) would, and
// decode(frame) exactly decodeMessage(frame)'s message, or rejects with the ProtocolError (decode) or
// FrameError (encode) it would have thrown. Only messages with large inputs are handed over
// (./messages.ts: inputBytes), so small requests never pay a thread hop.

import type { Frame } from './framing.js';
import type { Message, MessageBody, MsgTypeName } from './messages.js';

export interface FrameCodec {
  /** The frame's parts to write, in order. */
  encode<T extends MsgTypeName>(type: T, body: MessageBody<T>, maxFrameBytes: number): Promise<Uint8Array[]>;
  /** The validated message. The frame's payload may be transferred (left empty) on the way. */
  decode(frame: Frame): Promise<Message>;
}
