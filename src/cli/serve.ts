// `serve` (the default role): sidecar and gateway in one command. The sidecar runs as a supervised
// child process (src/sidecar/supervisor.ts: restarted if it dies after a successful start) on a Unix
// socket inside a private 0700 temp directory (./run-dir.ts: removed on any exit this process sees, and
// a stale one at the next start), so two `serve`s on one host never collide. The child's environment
// holds no secret it does not need (./child-env.ts). With --api-server-count N > 1 the gateway is N
// processes (./cluster.ts) on the one port, this process their primary and the sidecar's supervisor.
// Shutdown on SIGTERM/SIGINT: the gateway drains first (/ready 503, in-flight streams finish), then
// the sidecar is stopped, then the socket directory is removed.

import path from 'node:path';
import { resolveModelDir } from '../sidecar/model/checkpoint.js';
import { SidecarSupervisor } from '../sidecar/supervisor.js';
import { forwardFlags, type ParsedArgs } from './args.js';
import { sidecarEnv } from './child-env.js';
import type { Config } from './config.js';
import { connectEngine, gatewayArgs, nextSignal, shutdownGateway, startGateway, startGateways } from './gateway-role.js';
import type { NodeGateway } from './node-server.js';
import type { CliLogger } from './logger.js';
import { createRunDir } from './run-dir.js';
import { tracerFromEnv } from './trace-file.js';
import { servingPoolFlags } from './v8-pool.js';

/**
 * How long past --drain-timeout the sidecar child may take to exit after SIGTERM before it gets SIGKILL:
 * after draining it still stops the engine's step thread and closes its sockets. Bounds a child stuck
 * there, so `serve` always exits.
 */
const SIDECAR_STOP_GRACE_MS = 5000;

export async function runServe(cfg: Config, args: ParsedArgs, env: NodeJS.ProcessEnv, logger: CliLogger, binPath: string): Promise<number> {
  // Fail fast on a --model that cannot resolve, before any process or socket exists.
  if (cfg.sidecar.model) await resolveModelDir(cfg.sidecar.model);
  const signal = nextSignal();
  const runDir = await createRunDir();
  if (runDir.removedStale.length > 0) logger.info({ removed: runDir.removedStale.length }, 'removed run directories left by dead serve processes');
  const sock = path.join(runDir.path, 'engine.sock');
  const supervisor = new SidecarSupervisor({
    command: process.execPath,
    args: [...servingPoolFlags(process.execArgv, env.NODE_OPTIONS), binPath, 'serve', '--role', 'sidecar', '--engine', `unix:${sock}`, ...forwardFlags(args.flags, 'engine', ['role'])],
    // The secret (when extra tcp:// listeners were asked for) travels by environment, never argv.
    env: sidecarEnv(env, cfg.engines.some((e) => e.kind === 'tcp') ? cfg.engineSecret : undefined),
    logger,
  });
  // /health answers once the gateway listens; /ready is 503 until the sidecar has loaded.
  let gw: NodeGateway;
  if (cfg.gateway.apiServerCount > 1) {
    gw = await startGateways(cfg, gatewayArgs(args, { kind: 'unix', path: sock }), env, logger, binPath);
  } else {
    const tracer = tracerFromEnv(env); // the sidecar child traces too: it inherits the variable
    gw = await startGateway(cfg, connectEngine({ kind: 'unix', path: sock }, undefined, tracer), logger, tracer);
  }
  const started = supervisor.start();
  const first = await Promise.race([
    started.then(() => 'ready' as const, (err: unknown) => err as Error),
    signal.then((s) => s),
  ]);
  let code = 0;
  if (first instanceof Error) {
    logger.error({ err: first.message }, 'could not start the engine sidecar');
    code = 1;
  } else {
    if (first === 'ready') {
      const a = gw.address;
      const base = 'path' in a ? `unix:${a.path}` : `http://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
      logger.info({ sidecarPid: supervisor.pid, openai: `${base}/v1` }, 'ready: OpenAI-compatible API');
    }
    await shutdownGateway(gw, logger, first === 'ready' ? await signal : first);
  }
  started.catch(() => undefined); // a start that failed after shutdown began is expected
  await gw.shutdown();
  await supervisor.stop(cfg.sidecar.drainTimeoutMs + SIDECAR_STOP_GRACE_MS);
  await runDir.remove();
  return code;
}
