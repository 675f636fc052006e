// `serve --role gateway`: the stateless HTTP half alone, connected to a sidecar over `--engine`.
// Also exports startGateway, which `serve` (./serve.ts) reuses with its private Unix socket.

import { createApp } from '../gateway/app.js';
import { warmUpGateway } from '../gateway/warm-up.js';
import type { EngineClient } from '../protocol/engine-client.js';
import { createTcpEngineClient, createUnixEngineClient } from '../protocol/node-socket.js';
import type { Tracer } from '../protocol/trace.js';
import type { Config, EngineAddress } from './config.js';
import type { CliLogger } from './logger.js';
import { onTermination, serveNode, type NodeGateway } from './node-server.js';
import { tracerFromEnv } from './trace-file.js';

export function connectEngine(addr: EngineAddress, secret: string | undefined, tracer?: Tracer): EngineClient {
  return addr.kind === 'unix' ? createUnixEngineClient(addr.path, { tracer }) : createTcpEngineClient(addr.host, addr.port, secret ?? '', { tracer });
}

export async function startGateway(cfg: Config, engine: EngineClient, logger: CliLogger, tracer?: Tracer): Promise<NodeGateway> {
  const g = cfg.gateway;
  const handle = createApp({
    engine,
    apiKey: g.apiKey,
    allowedOrigins: g.allowedOrigins,
    servedModelName: g.servedModelName,
    logger,
    tracer,
  });
  const warmUpRequests = await warmUpGateway(handle); // before listening: no request meets the cold code
  const gw = await serveNode({ handle, engine, listen: g.listen, drainTimeoutMs: g.drainTimeoutMs, drainDelayMs: g.drainDelayMs, limits: g.limits });
  const a = gw.address;
  const url = 'path' in a ? `unix:${a.path}` : `http://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
  logger.info({ url, address: a, apiKey: g.apiKey ? 'required' : 'none', cors: g.allowedOrigins ?? 'off', warmUpRequests }, 'gateway listening');
  return gw;
}

/** Resolves with the first SIGTERM/SIGINT (a second one exits at once). */
export function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    onTermination(async (signal) => resolve(signal));
  });
}

export async function shutdownGateway(gw: NodeGateway, logger: CliLogger, signal: string): Promise<void> {
  logger.info({ signal, inFlight: gw.inFlight }, 'draining: /ready is 503, waiting for in-flight requests');
  const clean = await gw.shutdown();
  if (clean) logger.info({}, 'gateway drained');
  else logger.warn({}, 'drain timeout: remaining connections were cut');
}

export async function runGatewayRole(cfg: Config, env: NodeJS.ProcessEnv, logger: CliLogger): Promise<number> {
  const signal = nextSignal();
  const tracer = tracerFromEnv(env);
  const engine = connectEngine(cfg.engines[0]!, cfg.engineSecret, tracer);
  const gw = await startGateway(cfg, engine, logger, tracer);
  await shutdownGateway(gw, logger, await signal);
  return 0;
}
