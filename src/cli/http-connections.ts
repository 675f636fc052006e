// What one HTTP client may make the gateway hold (an ARCHITECTURE.md invariant): time without a request
// head, idle keep-alive time, requests in progress per connection, open connections. The Node server of
// src/cli/node-server.ts is built here.
//
// - Request heads: Node's `headersTimeout` answers 408 and closes a connection whose head is not complete
//   this long after it opened (or after the previous response, for a kept-alive one). Node checks its
//   connections only every `connectionsCheckingInterval` (default 30 s), so the interval is set to a
//   fraction of the timeout. `requestTimeout` (the whole request, body included) stays above it.
// - Keep-alive: Node's `keepAliveTimeout` (uvicorn's and vLLM's --timeout-keep-alive, default 5 s).
// - Pipelining: Node hands every request it parses to the handler at once and queues the responses in
//   order; its own flood guard (pausing the socket once queued output passes the high-water mark) sees
//   only output already written, while our handlers answer later (/metrics asks the engine first). So
//   100,000 pipelined requests from a client that never reads all ran and all their responses waited in
//   memory. `limitPipelining` hands at most `maxPipelined` requests of a connection to the handler;
//   later ones wait (cheap: a parsed head, no handler has run) with the socket paused, so the client's
//   bytes stay in the kernel's buffers until a response finishes (uvicorn does the same: pause reading,
//   queue the parsed request). What one read already brought in (at most one 64 KiB chunk) is parsed.
// - Open connections: past `maxConnections`, a new connection gets a 503 and is closed without being
//   read (uvicorn's --limit-concurrency answers 503 too). Node's own `server.maxConnections` would
//   drop it without a word.

import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  /** A request head must be complete this long after the connection opened or went idle (408 then). */
  headersTimeoutMs: number;
  /** An idle kept-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** Requests of one connection handled at once; later pipelined ones wait, the socket unread. */
  maxPipelined: number;
  /** Most open connections; past it new ones get 503 and are closed. Undefined: no cap. */
  maxConnections?: number;
}

/** uvicorn's and vLLM's keep-alive (VLLM_HTTP_TIMEOUT_KEEP_ALIVE): 5 s. */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** A request head is a few hundred bytes sent at once; 10 s is slack for a slow link, not for an idle socket. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/**
 * NOTE: 4, not uvicorn's 1 (it runs a connection's requests one after the other): a client that pipelines
 * small requests gets a little overlap; each one handled may hold a whole response body in memory, so the
 * bound stays small.
 */
export const DEFAULT_MAX_PIPELINED = 4;
/** Node's own default for the whole request (head and body): 300 s; kept, and never below the head's. */
const REQUEST_TIMEOUT_MS = 300_000;

const SERVICE_UNAVAILABLE = [
  'HTTP/1.1 503 Service Unavailable',
  'content-type: application/json',
  'connection: close',
  'retry-after: 1',
].join('\r\n');

function overloadResponse(): string {
  const body = JSON.stringify({
    error: { message: 'Too many open connections; retry later.', type: 'service_unavailable_error', param: null, code: 'too_many_connections' },
  });
  return `${SERVICE_UNAVAILABLE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** Tells the caller when a request is handed to the listener and when it ended (in-flight counting). */
export interface RequestHooks {
  started?(req: IncomingMessage, res: ServerResponse): void;
  /** Once per started request: its response closed, or its connection did. */
  ended?(): void;
}

/** A Node HTTP server for `listener` under `limits`. */
export function createLimitedServer(listener: RequestListener, limits: ConnectionLimits, hooks: RequestHooks = {}): Server {
  const headersTimeout = limits.headersTimeoutMs;
  const server = createServer(
    {
      headersTimeout,
      requestTimeout: Math.max(REQUEST_TIMEOUT_MS, headersTimeout + 1),
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // How often Node looks for connections past headersTimeout/requestTimeout.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    limitPipelining(listener, limits.maxPipelined, hooks),
  );
  if (limits.maxConnections !== undefined) capConnections(server, limits.maxConnections);
  return server;
}

function capConnections(server: Server, max: number): void {
  let open = 0;
  // 'connection' listeners run before the HTTP machinery reads anything of the socket.
  server.prependListener('connection', (socket: Socket) => {
    if (open >= max) {
      socket.end(overloadResponse());
      socket.destroySoon();
      return;
    }
    open++;
    socket.once('close', () => open--);
  });
}

interface ConnState {
  waiting: [IncomingMessage, ServerResponse][];
  /** End callbacks of the requests being handled. */
  active: Set<() => void>;
}

/**
 * Hands at most `max` requests of a connection to `listener` at once (see the file comment). While
 * requests wait, the socket stays paused: Node resumes it when its own output drains or a request body is
 * read, and the 'resume' listener pauses it again (the bodies of the requests being handled came before
 * the waiting heads in the byte stream, so they are complete and nothing is starved).
 * NOTE: one 'close' listener per connection, not per request: a pipelined response still queued behind
 * another emits no 'close' of its own when the client goes away, so the socket's close ends them all.
 */
export function limitPipelining(listener: RequestListener, max: number, hooks: RequestHooks = {}): RequestListener {
  const states = new WeakMap<Socket, ConnState>();
  const run = (socket: Socket, st: ConnState, req: IncomingMessage, res: ServerResponse) => {
    const end = () => {
      if (!st.active.delete(end)) return;
      res.off('close', end);
      hooks.ended?.();
      const next = st.waiting.shift();
      if (next && !socket.destroyed) run(socket, st, ...next);
      else if (st.waiting.length === 0 && socket.isPaused()) socket.resume();
    };
    st.active.add(end);
    res.once('close', end);
    hooks.started?.(req, res);
    listener(req, res);
  };
  return (req, res) => {
    const socket = req.socket;
    if (socket.destroyed) return; // the rest of a chunk parsed after the connection died
    let st = states.get(socket);
    if (!st) {
      const state: ConnState = { waiting: [], active: new Set() };
      st = state;
      states.set(socket, state);
      socket.on('resume', () => {
        if (state.waiting.length > 0) socket.pause();
      });
      socket.once('close', () => {
        state.waiting.length = 0;
        for (const end of [...state.active]) end();
      });
    }
    if (st.active.size < max) return run(socket, st, req, res);
    st.waiting.push([req, res]);
    socket.pause();
  };
}
