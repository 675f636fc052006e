// serveEngine: the server half of the framed protocol. Exposes any in-process EngineClient-like
// backend over one ByteTransport (one call per accepted connection). The sidecar wires it to its
// socket server; tests wire it to an in-memory pair.
//
// Contract:
// - The first message must be HELLO with our PROTOCOL_VERSION (and the secret, when one is configured);
//   anything else gets HELLO_ERR and the connection is closed.
// - Each SUBMIT runs as its own task; its events are written as they come. Writes await the transport
//   (socket drain), which is the backpressure towards the engine.
// - When the connection closes, every request it started is aborted in the backend (a gateway that
//   died must not leave KV blocks allocated).

import { EngineError, type EngineClient, type ResponseStore, type SubmitRequest } from './engine-client.js';
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

export interface ServeEngineOptions {
  /** When set, HELLO must carry exactly this secret (compared in constant time). */
  secret?: string;
  maxFrameBytes?: number;
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
  const decoder = new FrameDecoder(maxFrameBytes);
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

const noStore = () => new EngineError('INVALID_REQUEST', 'this engine keeps no stored responses');

function toWireError(err: unknown): WireError {
  if (err instanceof EngineError) return { code: err.code, message: err.message, param: err.param };
  return { code: 'INTERNAL', message: errMessage(err), param: null };
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
