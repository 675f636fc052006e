// The gateway app (src/gateway/app.ts) as a Node HTTP server: @hono/node-server on TCP or a Unix
// socket, with graceful shutdown. The EngineClient (Unix-socket or TCP) is chosen by the caller and
// already inside `handle`; spawning the sidecar is src/sidecar/supervisor.ts's job.
//
// shutdown(): /ready → 503 at once (load balancers stop routing), optionally a lame-duck period
// (drainDelayMs) in which new requests are still served, then the listener stops accepting,
// idle keep-alive connections close, in-flight requests (streams included) get up to drainTimeoutMs
// to finish. Past drainTimeoutMs the engine client is closed with the reason, so every stream still open
// ends the way any engine failure does, with an SSE error event (OpenAI's error shape, which openai-node
// and openai-python raise as an APIError) and `[DONE]`, and unary requests get a 503; a client that does
// not read that in DRAIN_CUT_GRACE_MS is cut with the remaining connections.
// Connection limits (request-head timeout, keep-alive, pipelining, open connections): ./http-connections.ts.

import { createAdaptorServer } from '@hono/node-server';
import type { createServer, RequestListener, Server } from 'node:http';
import type { AddressInfo, ListenOptions } from 'node:net';
import type { AppHandle } from '../gateway/app.js';
import type { EngineClient } from '../protocol/engine-client.js';
import { createLimitedServer, DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_KEEP_ALIVE_TIMEOUT_MS, DEFAULT_MAX_PIPELINED, type ConnectionLimits } from './http-connections.js';

export type Listen = { host: string; port: number } | { path: string };

export interface NodeGatewayOptions {
  handle: AppHandle;
  engine: EngineClient;
  listen: Listen;
  drainTimeoutMs: number;
  /**
   * Lame-duck period before the drain: /ready is already 503 and new requests are still served, so a
   * load balancer that probes /ready stops routing here before connections start being refused.
   * Default 0 (Kubernetes: use a preStop sleep instead, endpoints are removed on termination).
   */
  drainDelayMs?: number;
  /** Headers set on every response (a gateway process of several names itself: ./cluster.ts). */
  responseHeaders?: Record<string, string>;
  /**
   * TCP only: bind this process's own socket with SO_REUSEPORT (Node 22.12+), so several gateway
   * processes share the port and the kernel spreads connections over them. In a cluster worker the
   * socket is then the worker's own, not the primary's round-robin handle (exclusive).
   */
  reusePort?: boolean;
  /** Per-connection limits; each one left out takes its default (./http-connections.ts). */
  limits?: Partial<ConnectionLimits>;
}

/** After the drain timeout, how long streams get to deliver their error event before connections are cut. */
export const DRAIN_CUT_GRACE_MS = 1000;

export interface NodeGateway {
  /** Where it listens: the bound port (useful with port 0) or the socket path. */
  readonly address: { host: string; port: number } | { path: string };
  /** Requests in flight in this process (absent for a cluster of processes: ./cluster.ts). */
  readonly inFlight?: number;
  /** Drains and closes; resolves true when every in-flight request finished in time. Idempotent. */
  shutdown(): Promise<boolean>;
}

export async function serveNode(opts: NodeGatewayOptions): Promise<NodeGateway> {
  const limits: ConnectionLimits = {
    headersTimeoutMs: opts.limits?.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: opts.limits?.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
    maxPipelined: opts.limits?.maxPipelined ?? DEFAULT_MAX_PIPELINED,
    maxConnections: opts.limits?.maxConnections,
  };
  let inFlight = 0;
  let draining = false;
  let idle: (() => void) | null = null;
  const headers = Object.entries(opts.responseHeaders ?? {});
  const server = createAdaptorServer({
    fetch: opts.handle.fetch,
    // @hono/node-server builds its server through this hook; the app's listener goes under the limits.
    createServer: ((_options: unknown, appListener: RequestListener) =>
      createLimitedServer(appListener, limits, {
        started: (_req, res) => {
          inFlight++;
          for (const [k, v] of headers) res.setHeader(k, v);
          if (draining) res.shouldKeepAlive = false;
        },
        ended: () => {
          inFlight--;
          if (draining) {
            server.closeIdleConnections();
            if (inFlight === 0) idle?.();
          }
        },
      })) as unknown as typeof createServer,
  }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if ('path' in opts.listen) server.listen(opts.listen.path, done);
    else if (opts.reusePort) {
      // reusePort is in Node 22.12+'s ListenOptions, not in the @types/node 20 this builds against.
      server.listen({ port: opts.listen.port, host: opts.listen.host, reusePort: true, exclusive: true } as ListenOptions, done);
    } else server.listen(opts.listen.port, opts.listen.host, done);
  });
  const bound = server.address();
  const address = typeof bound === 'string' ? { path: bound } : { host: (bound as AddressInfo).address, port: (bound as AddressInfo).port };

  let shutdown: Promise<boolean> | null = null;
  const drain = async (): Promise<boolean> => {
    draining = true; // from now on responses say Connection: close (clients reconnect elsewhere)
    opts.handle.setDraining(true);
    if (opts.drainDelayMs) await new Promise((resolve) => setTimeout(resolve, opts.drainDelayMs));
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finished = await Promise.race([
      new Promise<boolean>((resolve) => {
        idle = () => resolve(true);
        if (inFlight === 0) resolve(true);
      }),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), opts.drainTimeoutMs))),
    ]);
    clearTimeout(timer);
    if (!finished) {
      // Streams still open end with an error event (see the file comment), then whatever is left is cut.
      await opts.engine.close(`the server is shutting down: the drain timeout (${opts.drainTimeoutMs / 1000} s) ended this request`);
      await new Promise<void>((resolve) => {
        const grace = setTimeout(resolve, DRAIN_CUT_GRACE_MS);
        idle = () => {
          clearTimeout(grace);
          resolve();
        };
        if (inFlight === 0) idle();
      });
    }
    server.closeAllConnections();
    await closed;
    await opts.engine.close();
    return finished;
  };
  return {
    address,
    get inFlight() {
      return inFlight;
    },
    shutdown: () => (shutdown ??= drain()),
  };
}

/**
 * Calls `onSignal` once on the first SIGTERM or SIGINT; a second signal exits at once (an impatient
 * operator must always be able to stop the process). Returns a function that removes the handlers.
 */
export function onTermination(onSignal: (signal: NodeJS.Signals) => Promise<void>, exit: (code: number) => void = process.exit): () => void {
  let received = false;
  const handler = (signal: NodeJS.Signals) => {
    if (received) return exit(130);
    received = true;
    onSignal(signal).catch(() => exit(1));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}
