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
// - Each SUBMIT runs as its own task; its events are written as they come. Writes await the transport
//   (socket drain), which is the backpressure towards the engine.
// - When the connection closes, every request it started is aborted in the backend (a gateway that
//   died must not leave KV blocks allocated).

import { EngineError, type EngineClient, type SubmitRequest } from './engine-client.js';
import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder } from './framing.js';
import {
  constantTimeEqual,
  decodeMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  type Message,
  type MessageBody,
  type MsgTypeName,
  type WireError,
} from './messages.js';
import type { Tracer } from './trace.js';
import type { ByteTransport } from './transport.js';

export type EngineBackend = Omit<EngineClient, 'close'>;

/** HELLO is a version and a secret (at most MAX_SECRET_BYTES): 4 KiB leave room and hold nothing more. */
export const PRE_AUTH_MAX_FRAME_BYTES = 4096;
/** The longest shared secret HELLO can carry under PRE_AUTH_MAX_FRAME_BYTES (the CLI refuses longer ones). */
export const MAX_SECRET_BYTES = 1024;
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
}

export interface ServedConnection {
  /** Resolves when the transport has closed and every task of this connection has settled. */
  readonly done: Promise<void>;
  close(): void;
}

export function serveEngine(transport: ByteTransport, backend: EngineBackend, opts: ServeEngineOptions = {}): ServedConnection {
  const maxFrameBytes = opts.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const decoder = new FrameDecoder(Math.min(PRE_AUTH_MAX_FRAME_BYTES, maxFrameBytes));
  const active = new Map<string, AbortController>();
  const tasks = new Set<Promise<void>>();
  let greeted = false;
  let closed = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const report = opts.onError ?? (() => undefined);

  const send = async <T extends MsgTypeName>(type: T, body: MessageBody<T>): Promise<void> => {
    if (closed) return; // the peer is gone; nobody is left to tell
    try {
      await transport.write(encodeMessage(type, body, maxFrameBytes));
    } catch (err) {
      if (!closed) report(err);
    }
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
  transport.onData((chunk) => {
    const at = tracer?.now();
    try {
      for (const frame of decoder.push(chunk)) {
        const msg = decodeMessage(frame);
        if (tracer && msg.type === 'SUBMIT') {
          tracer.mark(msg.body.req.id, 'sc.recv', at);
          tracer.mark(msg.body.req.id, 'sc.decoded');
        }
        handle(msg);
      }
    } catch (err) {
      report(err);
      transport.close();
    }
  });
  transport.onClose(() => {
    closed = true;
    clearTimeout(handshakeTimer);
    for (const [id, ctl] of active) {
      ctl.abort();
      track(backend.abort(id));
    }
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
          (err: unknown) => refuse(err instanceof EngineError ? err.code : 'INTERNAL', errMessage(err)),
        ),
      );
      return;
    }
    switch (msg.type) {
      case 'SUBMIT':
        return track(runStream(msg.body.req));
      case 'ABORT': {
        const { id, cid } = msg.body;
        active.get(id)?.abort();
        return reply(cid, backend.abort(id).then(() => null));
      }
      case 'STATS':
        return reply(msg.body.cid, backend.stats());
      case 'HEALTH':
        return reply(msg.body.cid, backend.health());
      case 'MODEL':
        return reply(msg.body.cid, backend.model());
      case 'TOKENIZE':
        return reply(msg.body.cid, backend.tokenize(msg.body.req));
      case 'DETOKENIZE':
        return reply(msg.body.cid, backend.detokenize(msg.body.tokens));
      default:
        report(new Error(`client sent a server message: ${msg.type}`));
        transport.close();
    }
  }

  function refuse(code: WireError['code'], message: string): void {
    track(send('HELLO_ERR', { version: PROTOCOL_VERSION, code, message }).finally(() => transport.close()));
  }

  function reply(cid: number, result: Promise<unknown>): void {
    track(
      result.then(
        (value) => send('REPLY', { cid, ok: true, result: value }),
        (err: unknown) => send('REPLY', { cid, ok: false, error: toWireError(err) }),
      ),
    );
  }

  async function runStream(req: SubmitRequest): Promise<void> {
    if (active.has(req.id)) {
      const error = { code: 'INVALID_REQUEST' as const, message: `duplicate request id ${req.id}`, param: 'id' };
      return send('EVENT', { id: req.id, event: { type: 'error', ...error } });
    }
    const ctl = new AbortController();
    active.set(req.id, ctl);
    try {
      for await (const event of backend.stream(req, ctl.signal)) {
        const sent = send('EVENT', { id: req.id, event }); // written synchronously, before any await
        if (tracer && (event.type === 'accepted' || event.type === 'delta')) tracer.mark(req.id, event.type === 'accepted' ? 'sc.accepted' : 'sc.delta');
        await sent;
      }
    } catch (err) {
      await send('EVENT', { id: req.id, event: { type: 'error', ...toWireError(err) } });
    } finally {
      active.delete(req.id);
    }
  }

  return {
    done,
    close: () => transport.close(),
  };
}

function toWireError(err: unknown): WireError {
  if (err instanceof EngineError) return { code: err.code, message: err.message, param: err.param };
  return { code: 'INTERNAL', message: errMessage(err), param: null };
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
