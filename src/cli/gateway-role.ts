// `serve --role gateway`: the stateless HTTP half alone, connected to a sidecar over `--engine`.
// Also exports startGateway, which `serve` (./serve.ts) reuses with its private Unix socket.

import { onTermination, serveNode, type NodeGateway } from '../../adapters/node.js';
import { createApp } from '../gateway/app.js';
import type { EngineClient } from '../protocol/engine-client.js';
import { createTcpEngineClient, createUnixEngineClient } from '../protocol/node-socket.js';
import type { Config, EngineAddress } from './config.js';
import type { CliLogger } from './logger.js';

export function connectEngine(addr: EngineAddress, secret: string | undefined): EngineClient {
  return addr.kind === 'unix' ? createUnixEngineClient(addr.path) : createTcpEngineClient(addr.host, addr.port, secret ?? '');
}

export async function startGateway(cfg: Config, engine: EngineClient, logger: CliLogger): Promise<NodeGateway> {
  const g = cfg.gateway;
  const handle = createApp({
    engine,
    apiKey: g.apiKey,
    allowedOrigins: g.allowedOrigins,
    servedModelName: g.servedModelName,
    logger,
  });
  const gw = await serveNode({ handle, engine, listen: g.listen, drainTimeoutMs: g.drainTimeoutMs, drainDelayMs: g.drainDelayMs });
  const a = gw.address;
  const url = 'path' in a ? `unix:${a.path}` : `http://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
  logger.info({ url, address: a, apiKey: g.apiKey ? 'required' : 'none', cors: g.allowedOrigins ?? 'off' }, 'gateway listening');
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

export async function runGatewayRole(cfg: Config, logger: CliLogger): Promise<number> {
  const signal = nextSignal();
  const engine = connectEngine(cfg.engines[0]!, cfg.engineSecret);
  const gw = await startGateway(cfg, engine, logger);
  await shutdownGateway(gw, logger, await signal);
  return 0;
}
