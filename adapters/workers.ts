// The Cloudflare Workers adapter (also `npx wrangler dev`): the same gateway app (src/gateway/app.ts)
// with a FramedEngineClient that reaches a sidecar over raw TCP — `connect()` from cloudflare:sockets —
// authenticated by the shared secret (the sidecar's `--engine tcp://…` listener).
//
// NOTE: the runtime is chosen in exactly one place, the entry point: wrangler.toml's `main` is this
// file's default export (for Node: bin/ernie-edge.js runs adapters/node.ts). Nothing under src/ asks
// which runtime it is on.
//
// Built once per isolate: the app (router, validators, metrics, so /metrics accumulates per isolate)
// is created on the first request, from that request's env (bindings are fixed per deployment).
// Per request (a contract of the Workers runtime, not a choice): the engine connection. An I/O object
// such as a socket belongs to the request that opened it and cannot be used from another request's
// handler, so every request brings its own client to the app (`fetch(req, { engine })`; it connects
// lazily, so /health opens none), closed when the response body ends or the client goes away.
//
// Bindings (wrangler.toml [vars], secrets by `wrangler secret put` or .dev.vars):
//   ENGINE                    tcp://host:port of the sidecar (required; Workers cannot reach Unix sockets)
//   ERNIE_EDGE_ENGINE_SECRET  the sidecar's shared secret (required)
//   API_KEY                   optional: require `Authorization: Bearer API_KEY` on the API routes
//   SERVED_MODEL_NAME, ALLOWED_ORIGINS ('*' or a comma-separated list), CHAT_UI ('off' hides the page)

import { connect } from 'cloudflare:sockets';
import { createApp, type AppHandle } from '../src/gateway/app.js';
import { FramedEngineClient } from '../src/protocol/framed-client.js';
import { webStreamTransport } from '../src/protocol/web-stream-transport.js';

export interface WorkerEnv {
  ENGINE?: string;
  ERNIE_EDGE_ENGINE_SECRET?: string;
  API_KEY?: string;
  SERVED_MODEL_NAME?: string;
  ALLOWED_ORIGINS?: string;
  CHAT_UI?: string;
}

/** The part of the Workers ExecutionContext used here. */
export interface WorkerContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** `tcp://host:port` (IPv6 in brackets) → the address connect() takes; anything else is a config error. */
export function parseTcpEngine(addr: string | undefined): { hostname: string; port: number } {
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d{1,5})\/?$/.exec(addr ?? '');
  if (!m || Number(m[2]) > 65535) throw new Error(`ENGINE must be tcp://host:port (Workers reach the sidecar over TCP), got '${addr ?? ''}'`);
  return { hostname: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

function engineClient(env: WorkerEnv): FramedEngineClient {
  const address = parseTcpEngine(env.ENGINE);
  if (!env.ERNIE_EDGE_ENGINE_SECRET) throw new Error('ERNIE_EDGE_ENGINE_SECRET is not set (wrangler secret put / .dev.vars)');
  return new FramedEngineClient({
    secret: env.ERNIE_EDGE_ENGINE_SECRET,
    connect: async () => {
      const socket = connect(address);
      await socket.opened; // a refused connection fails here, not inside the handshake
      return webStreamTransport(socket);
    },
    // One request, one short life: two quick attempts, then ENGINE_DEAD (503) rather than a long wait.
    retry: { attempts: 2, initialDelayMs: 50, maxDelayMs: 200 },
  });
}

function origins(v: string | undefined): string[] | '*' | undefined {
  if (!v) return undefined;
  const list = v.split(',').map((s) => s.trim()).filter(Boolean);
  return list.includes('*') ? '*' : list;
}

export function createWorker() {
  let handle: AppHandle | null = null;
  return {
    async fetch(req: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> {
      const engine = engineClient(env); // first: a misconfigured ENGINE fails every request, not only the first
      handle ??= createApp({
        apiKey: env.API_KEY || undefined,
        allowedOrigins: origins(env.ALLOWED_ORIGINS),
        servedModelName: env.SERVED_MODEL_NAME || undefined,
        chatUi: env.CHAT_UI !== 'off',
      });
      const res = await handle.fetch(req, { engine }); // never throws: errors.ts maps every failure to a response
      if (!res.body) {
        await engine.close();
        return res;
      }
      // The socket must outlive the handler while a body (an SSE stream) is still being produced:
      // pipe it through and close the engine connection when the pipe settles. A client that goes
      // away cancels the pipe, which cancels the app's stream (→ ABORT to the engine) before close.
      const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
      ctx.waitUntil(
        res.body
          .pipeTo(writable)
          .catch(() => undefined)
          .finally(() => engine.close()),
      );
      return new Response(readable, res);
    },
  };
}

export default createWorker();
