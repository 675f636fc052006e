// `serve --role sidecar`: the engine host process alone, listening on every `--engine` address.
// Exit codes: 0 after a clean shutdown, 1 when the model failed to load or the engine died (loudly:
// the error is logged as fatal before exiting — a supervisor or Kubernetes then restarts us).
// When started by `serve` (an IPC channel exists) it reports {type: 'ready'} and exits with its parent.

import type { EngineFactory } from '../sidecar/engine/factory.js';
import { startSidecar } from '../sidecar/main.js';
import { processCodec } from './off-thread-codec.js';
import type { Config } from './config.js';
import { nextSignal } from './gateway-role.js';
import type { CliLogger } from './logger.js';
import { progressBar } from './progress-bar.js';
import { tracerFromEnv } from './trace-file.js';

export async function runSidecarRole(cfg: Config, env: NodeJS.ProcessEnv, logger: CliLogger, factory: EngineFactory): Promise<number> {
  const stop = new Promise<string>((resolve) => {
    void nextSignal().then(resolve);
    process.once('disconnect', () => resolve('parent exited'));
  });
  // Engine death: an error escaping the step callback or the binding. Requests cannot be trusted
  // to finish any more, so the process dies now and loudly.
  process.on('uncaughtException', (err) => {
    logger.fatal({ err: err.stack ?? String(err) }, 'ENGINE DIED: exiting');
    process.exit(1);
  });
  const bar = progressBar();
  if (factory.kind === 'fake') logger.warn({}, 'using an injected fake engine (tests only)');
  const sidecar = await startSidecar(
    { ...cfg.sidecar, listen: cfg.engines, secret: cfg.engineSecret },
    { logger, factory, onProgress: (label, done, total) => bar.update(label, done, total), tracer: tracerFromEnv(env), codec: processCodec() },
  );
  try {
    await sidecar.loaded;
  } catch (err) {
    bar.end();
    logger.error({ err: (err as Error).message }, 'the model failed to load');
    await sidecar.close(0);
    return 1;
  }
  bar.end();
  process.send?.({ type: 'ready' });
  const reason = await stop;
  logger.info({ reason, drainTimeoutMs: cfg.sidecar.drainTimeoutMs }, 'sidecar shutting down');
  await sidecar.close(cfg.sidecar.drainTimeoutMs);
  return 0;
}
