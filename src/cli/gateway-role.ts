// `serve --role gateway`: the stateless HTTP half alone, connected to a sidecar over `--engine`.
// Also exports startGateway, which `serve` (./serve.ts) reuses with its private Unix socket.

import { createApp, type AppHandle } from '../gateway/app.js';
import { warmUpGateway } from '../gateway/warm-up.js';
import type { EngineClient } from '../protocol/engine-client.js';
import { createTcpEngineClient, createUnixEngineClient } from '../protocol/node-socket.js';
import type { Tracer } from '../protocol/trace.js';
import cluster from 'node:cluster';
import { forwardFlags, type ParsedArgs } from './args.js';
import { engineReady, warmUpThroughHttp } from './http-warm-up.js';
import { ClusterMetrics } from './cluster-metrics.js';
import { ENV_LISTEN, ENV_REUSE_PORT, ENV_SLOT, isMessage, type PrimaryMessage, type WorkerMessage } from './cluster-messages.js';
import { startGatewayCluster } from './cluster.js';
import { formatEngineAddress, type Config, type EngineAddress } from './config.js';
import type { CliLogger } from './logger.js';
import { processCodec } from './off-thread-codec.js';
import { onTermination, serveNode, type Listen, type NodeGateway } from './node-server.js';
import { tracerFromEnv } from './trace-file.js';

export function connectEngine(addr: EngineAddress, secret: string | undefined, tracer?: Tracer): EngineClient {
  const opts = { tracer, codec: processCodec() };
  return addr.kind === 'unix' ? createUnixEngineClient(addr.path, opts) : createTcpEngineClient(addr.host, addr.port, secret ?? '', opts);
}

/** One gateway process of several (`--api-server-count`), as the primary (./cluster.ts) started it. */
export interface ApiServerSlot {
  slot: number;
  listen: Listen;
  reusePort: boolean;
}

/** The slot this process was forked for, or null when it is not a cluster gateway. */
export function apiServerSlot(env: NodeJS.ProcessEnv): ApiServerSlot | null {
  if (!cluster.isWorker || !env[ENV_SLOT] || !env[ENV_LISTEN]) return null;
  return { slot: Number(env[ENV_SLOT]), listen: JSON.parse(env[ENV_LISTEN]) as Listen, reusePort: env[ENV_REUSE_PORT] === '1' };
}

export async function startGateway(cfg: Config, engine: EngineClient, logger: CliLogger, tracer?: Tracer, slot: ApiServerSlot | null = null): Promise<NodeGateway> {
  const g = cfg.gateway;
  const handle = createApp({
    engine,
    parseLargeBody: (bytes, schema) => processCodec().parseBody(bytes, schema),
    apiKey: g.apiKey,
    allowedOrigins: g.allowedOrigins,
    servedModelName: g.servedModelName,
    streamStallTimeoutMs: g.streamStallTimeoutMs,
    toolCallParser: g.toolCallParser,
    enableAutoToolChoice: g.enableAutoToolChoice,
    logger,
    tracer,
    ...(slot ? { metrics: new ClusterMetrics(process) } : {}),
  });
  const warmUpRequests = await warmUpGateway(handle); // before listening: no request meets the cold code
  const gw = await serveNode({
    handle,
    engine,
    listen: slot?.listen ?? g.listen,
    drainTimeoutMs: g.drainTimeoutMs,
    drainDelayMs: g.drainDelayMs,
    limits: g.limits,
    ...(slot ? { responseHeaders: { [API_SERVER_HEADER]: String(slot.slot) }, reusePort: slot.reusePort } : {}),
  });
  const a = gw.address;
  const url = 'path' in a ? `unix:${a.path}` : `http://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
  const where = slot ? { apiServer: slot.slot } : {};
  logger.info({ url, address: a, apiKey: g.apiKey ? 'required' : 'none', cors: g.allowedOrigins ?? 'off', warmUpRequests, ...where }, 'gateway listening');
  if (slot) process.send?.({ type: 'listening', address: a } satisfies WorkerMessage);
  if (g.warmupRequests <= 0) return gw;
  // /ready stays 503 until this process has warmed its request path (./http-warm-up.ts); draining stops it.
  handle.setWarming(true);
  const stop = new AbortController();
  // Never rejects (a failed warm-up only costs speed): shutdown can always await it.
  const warm = warmUpWhenReady(handle, engine, g.warmupRequests, g.apiKey, logger, stop.signal, where).catch(() => undefined);
  return {
    address: gw.address,
    get inFlight() {
      return gw.inFlight;
    },
    shutdown: async () => {
      stop.abort();
      await warm;
      return gw.shutdown();
    },
  };
}

async function warmUpWhenReady(handle: AppHandle, engine: EngineClient, requests: number, apiKey: string | undefined, logger: CliLogger, signal: AbortSignal, where: object): Promise<void> {
  try {
    if (!(await engineReady(engine, signal))) return;
    const r = await warmUpThroughHttp(handle, engine, { requests, apiKey, signal });
    const line = { warmUpRequests: r.ok, warmUpMs: Math.round(r.ms), ...where };
    if (r.stoppedBy && r.stoppedBy !== 'budget' && r.stoppedBy !== 'aborted') logger.warn({ ...line, stoppedBy: r.stoppedBy }, 'gateway warm-up stopped early: the first requests will be slower');
    else logger.info({ ...line, ...(r.stoppedBy ? { stoppedBy: r.stoppedBy } : {}) }, 'gateway warm-up done: requests took the whole path once the engine was ready');
  } finally {
    handle.setWarming(false);
  }
}

/** Names the gateway process that answered, when there are several (`--api-server-count`). */
export const API_SERVER_HEADER = 'x-ernie-edge-api-server';

/** Resolves with the first SIGTERM/SIGINT (a second one exits at once). */
export function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    onTermination(async (signal) => resolve(signal));
  });
}

export async function shutdownGateway(gw: NodeGateway, logger: CliLogger, signal: string): Promise<void> {
  logger.info({ signal, ...(gw.inFlight === undefined ? {} : { inFlight: gw.inFlight }) }, 'draining: /ready is 503, waiting for in-flight requests');
  const clean = await gw.shutdown();
  if (clean) logger.info({}, 'gateway drained');
  else logger.warn({}, 'drain timeout: remaining connections were cut');
}

export async function runGatewayRole(cfg: Config, args: ParsedArgs, env: NodeJS.ProcessEnv, logger: CliLogger, binPath: string): Promise<number> {
  const slot = apiServerSlot(env);
  if (!slot && cfg.gateway.apiServerCount > 1) {
    const engine = cfg.engines[0]!;
    return runGatewayCluster(cfg, gatewayArgs(args, engine), env, logger, binPath);
  }
  const signal = slot ? nextSignalOrDrain() : nextSignal();
  const tracer = tracerFromEnv(env);
  const engine = connectEngine(cfg.engines[0]!, cfg.engineSecret, tracer);
  const gw = await startGateway(cfg, engine, logger, tracer, slot);
  await shutdownGateway(gw, logger, await signal);
  return 0;
}

/** A cluster gateway's stop: a signal, the primary's `drain`, or the primary gone (its channel closed). */
function nextSignalOrDrain(): Promise<string> {
  return new Promise((resolve) => {
    void nextSignal().then(resolve);
    process.on('message', (m: unknown) => {
      if (isMessage<PrimaryMessage>(m) && m.type === 'drain') resolve('drain (from the primary)');
    });
    process.once('disconnect', () => resolve('primary exited'));
  });
}

/** The command line of one cluster gateway: `serve --role gateway --engine ADDR` and the gateway's flags. */
export function gatewayArgs(args: ParsedArgs, engine: EngineAddress): string[] {
  return ['serve', '--role', 'gateway', '--engine', formatEngineAddress(engine), ...forwardFlags(args.flags, 'gateway', ['role', 'engine', 'api-server-count'])];
}

/** `--api-server-count` gateway processes (./cluster.ts) running `gwArgs`, connected to one sidecar. */
export function startGateways(cfg: Config, gwArgs: string[], env: NodeJS.ProcessEnv, logger: CliLogger, binPath: string): Promise<NodeGateway> {
  return startGatewayCluster({
    count: cfg.gateway.apiServerCount,
    exec: binPath,
    args: gwArgs,
    // Flags read from the environment are never forwarded in argv (./args.ts): hand them over here.
    env: { ...env, ...(cfg.gateway.apiKey ? { ERNIE_EDGE_API_KEY: cfg.gateway.apiKey } : {}), ...(cfg.engineSecret ? { ERNIE_EDGE_ENGINE_SECRET: cfg.engineSecret } : {}) },
    listen: cfg.gateway.listen,
    drainTimeoutMs: cfg.gateway.drainTimeoutMs,
    logger,
  });
}

async function runGatewayCluster(cfg: Config, gwArgs: string[], env: NodeJS.ProcessEnv, logger: CliLogger, binPath: string): Promise<number> {
  const signal = nextSignal();
  const gw = await startGateways(cfg, gwArgs, env, logger, binPath);
  await shutdownGateway(gw, logger, await signal);
  return 0;
}
