// serveEngine: the server half of the framed protocol. Exposes any in-process EngineClient-like
// backend over one ByteTransport (one call per accepted connection). The sidecar wires it to its
// socket server; tests wire it to an in-memory pair.
//
// Contract:
// - The first message must be HELLO with our PROTOCOL_VERSION (and the secret, when one is configured);
//   anything else gets HELLO_ERR and the connection is closed.
// - Until that HELLO is accepted, frames are capped at PRE_AUTH_MAX_FRAME_BYTES (a larger declared length
//   closes the connection at its 5-byte header, before any payload is buffered), and a peer that has not
//   sent it within handshakeTimeoutMs is disconnected: an unauthenticated peer can hold a few KiB for a
//   few seconds, no more. A client must wait for HELLO_OK before sending anything larger (ours does).
// - Each SUBMIT opens a stream on the backend (its push interface, ./push-stream.ts, or its pull-based
//   stream() through pushFromIterable). Events of all streams are collected as they come and sent
//   together when the current task's synchronous work ends (a microtask): the events one engine step
//   produced leave as one STEP frame per connection.
// - Writes are not awaited per stream: what a stream can have in flight is bounded by its flow-control
//   window (./flow.ts), which CREDIT frames open again; a full window pauses the stream in the engine.
// - When the connection closes, every request it started is aborted in the backend (a gateway that
//   died must not leave KV blocks allocated).

import { EngineError, type EngineClient, type ResponseStore, type SubmitRequest, type TokenizeResult } from './engine-client.js';
import type { FrameCodec } from './frame-codec.js';
import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder, FrameError, writeParts, type Frame } from './framing.js';
import {
  constantTimeEqual,
  decodeMessage,
  encodeMessage,
  encodeMessageParts,
  LARGE_INPUT_BYTES,
  PROTOCOL_VERSION,
  type Message,
  type MessageBody,
  type MsgTypeName,
  type WireError,
  type WireEvent,
} from './messages.js';
import { pushFromIterable, toWireError, type PushBackend, type PushedStream } from './push-stream.js';
import type { Tracer } from './trace.js';
import type { ByteTransport } from './transport.js';

/** What serveEngine serves: an EngineClient without close(), with the push interface when it has one. */
export type EngineBackend = Omit<EngineClient, 'close'> & Partial<PushBackend>;

/** HELLO is a version and a secret (at most MAX_SECRET_BYTES): 4 KiB leave room and hold nothing more. */
export const PRE_AUTH_MAX_FRAME_BYTES = 4096;
/** The longest shared secret HELLO can carry under PRE_AUTH_MAX_FRAME_BYTES (the CLI refuses longer ones). */
export const MAX_SECRET_BYTES = 1024;
/** Frames past this size are each handled on an event-loop turn of their own (see `inbox` below). */
export const LARGE_FRAME_BYTES = 256 * 1024;
/** A client sends HELLO as soon as it is connected; this bounds a peer that connects and says nothing. */
export const DEFAULT_SERVER_HANDSHAKE_TIMEOUT_MS = 5_000;

export interface ServeEngineOptions {
  /** When set, HELLO must carry exactly this secret (compared in constant time). */
  secret?: string;
  /** Frame cap once the peer is authenticated (before: PRE_AUTH_MAX_FRAME_BYTES). */
  maxFrameBytes?: number;
  /** Time from connection to an accepted HELLO before the peer is disconnected. */
  handshakeTimeoutMs?: number;
  /** Reports protocol violations and backend failures; default: silent. */
  onError?: (err: unknown) => void;
  /** Stage marks of streams (sc.recv, sc.decoded, sc.accepted, sc.delta); default none. */
  tracer?: Tracer;
  /** Decodes large frames (past LARGE_INPUT_BYTES) off this thread (./frame-codec.ts); default: on it. */
  codec?: FrameCodec;
}

export interface ServedConnection {
  /** Resolves when the transport has closed and every task of this connection has settled. */
  readonly done: Promise<void>;
  close(): void;
}

export function serveEngine(transport: ByteTransport, backend: EngineBackend, opts: ServeEngineOptions = {}): ServedConnection {
  const maxFrameBytes = opts.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const decoder = new FrameDecoder(Math.min(PRE_AUTH_MAX_FRAME_BYTES, maxFrameBytes));
  const active = new Map<string, PushedStream>();
  const tasks = new Set<Promise<void>>();
  let greeted = false;
  let closed = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const report = opts.onError ?? (() => undefined);
  // Events of every stream since the last STEP frame, in the order they were made.
  let outbox: [string, WireEvent][] = [];
  let flushQueued = false;

  const write = (bytes: Uint8Array): Promise<void> =>
    transport.write(bytes).catch((err: unknown) => {
      if (!closed) report(err);
    });
  const send = async <T extends MsgTypeName>(type: T, body: MessageBody<T>): Promise<void> => {
    if (closed) return; // the peer is gone; nobody is left to tell
    await writeParts(write, encodeMessageParts(type, body, maxFrameBytes));
  };
  const track = (task: Promise<void>) => {
    const t = task.catch(report).finally(() => tasks.delete(t));
    tasks.add(t);
  };

  const handshakeTimer = setTimeout(() => {
    report(new Error('engine peer sent no valid HELLO in time: disconnected'));
    transport.close();
  }, opts.handshakeTimeoutMs ?? DEFAULT_SERVER_HANDSHAKE_TIMEOUT_MS);
  const tracer = opts.tracer;
  const flush = () => {
    flushQueued = false;
    const events = outbox;
    outbox = [];
    if (closed || events.length === 0) return;
    void write(encodeMessage('STEP', { events }, maxFrameBytes));
    if (tracer) for (const [id, ev] of events) if (ev.type === 'accepted' || ev.type === 'delta') tracer.mark(id, ev.type === 'accepted' ? 'sc.accepted' : 'sc.delta');
  };
  const post = (id: string, ev: WireEvent) => {
    if (closed) return;
    outbox.push([id, ev]);
    if (!flushQueued) {
      flushQueued = true;
      queueMicrotask(flush);
    }
  };

  // Frames received and not yet handled, in arrival order. NOTE: after a large frame (a multi-megabyte
  // prompt: whole-payload passes to decode and check) the rest wait for a later event-loop turn, so the
  // I/O that arrived meanwhile (the engine's steps for other streams, their credit) runs between two
  // such frames instead of after all of them (issue #26). Order is kept. With a codec, a frame past
  // LARGE_INPUT_BYTES from an authenticated peer (the pre-auth cap keeps anything that large away until
  // HELLO is accepted) is decoded off this thread and handled when that is done; the frames behind it
  // do not wait (other streams' CREDIT must not stall behind one client's megabytes). The one order
  // kept is a request's ABORT after its SUBMIT: an ABORT that comes while large frames are being decoded
  // is remembered, and a SUBMIT decoded with that id is aborted as soon as it is opened.
  const inbox: { frame: Frame; at?: number }[] = [];
  let resumeQueued = false;
  let decoding = 0; // large frames with the codec
  const abortedWhileDecoding = new Set<string>();
  const handleDecoded = (msg: Message, at: number | undefined) => {
    if (tracer && msg.type === 'SUBMIT') {
      tracer.mark(msg.body.req.id, 'sc.recv', at);
      tracer.mark(msg.body.req.id, 'sc.decoded');
    }
    if (decoding > 0 && msg.type === 'ABORT') abortedWhileDecoding.add(msg.body.id);
    handle(msg);
  };
  const fail = (err: unknown) => {
    report(err);
    transport.close();
  };
  const handleInbox = () => {
    resumeQueued = false;
    try {
      for (let next = inbox.shift(); next && !closed; next = inbox.shift()) {
        const bytes = next.frame.payload.length;
        if (opts.codec && greeted && bytes > LARGE_INPUT_BYTES) {
          const { at } = next;
          decoding++;
          opts.codec
            .decode(next.frame)
            .then((msg) => {
              if (closed) return;
              handleDecoded(msg, at);
              if (msg.type === 'SUBMIT' && abortedWhileDecoding.delete(msg.body.req.id)) {
                active.get(msg.body.req.id)?.abort();
                track(backend.abort(msg.body.req.id));
              }
            })
            .catch(fail)
            .finally(() => {
              if (--decoding === 0) abortedWhileDecoding.clear();
            });
          continue;
        }
        handleDecoded(decodeMessage(next.frame), next.at);
        if (bytes > LARGE_FRAME_BYTES) {
          resumeQueued = true;
          setTimeout(handleInbox, 0);
          return;
        }
      }
    } catch (err) {
      fail(err);
    }
  };
  transport.onData((chunk) => {
    const at = tracer?.now();
    try {
      for (const frame of decoder.push(chunk)) inbox.push({ frame, at });
    } catch (err) {
      report(err);
      transport.close();
      return;
    }
    if (!resumeQueued) handleInbox();
  });
  transport.onClose(() => {
    closed = true;
    clearTimeout(handshakeTimer);
    outbox = [];
    inbox.length = 0;
    for (const [id, stream] of active) {
      stream.abort();
      track(backend.abort(id));
    }
    active.clear();
    void Promise.allSettled([...tasks]).then(() => resolveDone());
  });

  function handle(msg: Message): void {
    if (!greeted) {
      if (msg.type !== 'HELLO') return refuse('INVALID_REQUEST', `expected HELLO, got ${msg.type}`);
      if (msg.body.version !== PROTOCOL_VERSION) {
        return refuse('INVALID_REQUEST', `protocol version mismatch: client ${msg.body.version}, server ${PROTOCOL_VERSION}`);
      }
      if (opts.secret !== undefined && !constantTimeEqual(msg.body.secret ?? '', opts.secret)) {
        return refuse('INVALID_REQUEST', 'wrong or missing shared secret');
      }
      greeted = true;
      clearTimeout(handshakeTimer);
      decoder.maxFrameBytes = maxFrameBytes;
      track(
        backend.model().then(
          (model) => send('HELLO_OK', { version: PROTOCOL_VERSION, model }),
          (err: unknown) => {
            const e = toWireError(err);
            refuse(e.code, e.message);
          },
        ),
      );
      return;
    }
    switch (msg.type) {
      case 'SUBMIT':
        return openStream(msg.body.req);
      case 'ABORT': {
        const { id, cid } = msg.body;
        active.get(id)?.abort();
        return reply(cid, backend.abort(id).then(() => null));
      }
      case 'CREDIT':
        for (const [id, consumed] of msg.body.consumed) active.get(id)?.credit(consumed);
        return;
      case 'STATS':
        return reply(msg.body.cid, backend.stats());
      case 'HEALTH':
        return reply(msg.body.cid, backend.health());
      case 'MODEL':
        return reply(msg.body.cid, backend.model());
      case 'TOKENIZE': {
        const { cid, req, packed } = msg.body;
        const result = backend.tokenize(req);
        if (packed) return replyIds(cid, result);
        // An array for a client that did not ask for packed ids (JSON would turn an Int32Array into an object).
        return reply(cid, result.then((r) => (r.tokens instanceof Int32Array ? { ...r, tokens: Array.from(r.tokens) } : r)));
      }
      case 'DETOKENIZE':
        return reply(msg.body.cid, backend.detokenize(msg.body.tokens));
      case 'RESPONSE_PUT':
        return reply(msg.body.cid, store().put(msg.body.id, msg.body.value).then(() => null));
      case 'RESPONSE_GET':
        return reply(msg.body.cid, store().get(msg.body.id));
      case 'RESPONSE_DELETE':
        return reply(msg.body.cid, store().delete(msg.body.id));
      default:
        report(new Error(`client sent a server message: ${msg.type}`));
        transport.close();
    }
  }

  /** The backend's response store; a REPLY error when it keeps none. */
  function store(): ResponseStore {
    if (backend.responses) return backend.responses;
    return {
      put: () => Promise.reject(noStore()),
      get: () => Promise.reject(noStore()),
      delete: () => Promise.reject(noStore()),
    };
  }

  function refuse(code: WireError['code'], message: string): void {
    track(send('HELLO_ERR', { version: PROTOCOL_VERSION, code, message }).finally(() => transport.close()));
  }

  function reply(cid: number, result: Promise<unknown>): void {
    answer(cid, result.then((value) => () => send('REPLY', { cid, ok: true, result: value })));
  }

  function replyIds(cid: number, result: Promise<TokenizeResult>): void {
    answer(
      cid,
      result.then(({ tokens, ...rest }) => () => send('REPLY_IDS', { cid, ok: true, result: rest, ids: tokens instanceof Int32Array ? tokens : Int32Array.from(tokens) })),
    );
  }

  /**
   * Sends a call's answer; a failure, or an answer that cannot be sent (a reply past the frame limit),
   * becomes an error REPLY, so the caller is never left waiting.
   */
  function answer(cid: number, sending: Promise<() => Promise<void>>): void {
    const fail = (err: unknown) => send('REPLY', { cid, ok: false, error: toWireError(err) });
    track(
      sending.then(
        (sendIt) => sendIt().catch((err: unknown) => fail(err instanceof FrameError ? new EngineError('INVALID_REQUEST', `the reply is too large for the engine protocol: ${err.message}`) : err)),
        fail,
      ),
    );
  }

  function openStream(req: SubmitRequest): void {
    const { id } = req;
    if (active.has(id)) return post(id, { type: 'error', code: 'INVALID_REQUEST', message: `duplicate request id ${id}`, param: 'id' });
    // The stream leaves `active` with its last event (done or error).
    let ended = false;
    const emit = (ev: WireEvent) => {
      if (ev.type === 'done' || ev.type === 'error') {
        ended = true;
        active.delete(id);
      }
      post(id, ev);
    };
    try {
      if (backend.open) {
        const stream = backend.open(req, emit);
        if (!ended && !closed) active.set(id, stream);
      } else {
        const stream = pushFromIterable(backend, req, emit);
        if (!ended && !closed) active.set(id, stream);
        track(stream.settled);
      }
    } catch (err) {
      post(id, { type: 'error', ...toWireError(err) });
    }
  }

  return {
    done,
    close: () => transport.close(),
  };
}

const noStore = () => new EngineError('INVALID_REQUEST', 'this engine keeps no stored responses');
