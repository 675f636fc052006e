// The CLI entry (bin/ernie-edge.js imports this, from dist/ or under tsx): parse, configure, dispatch by role.
// Returns the process exit code: 0 ok, 1 runtime failure, 2 usage error. Never calls process.exit.
// `deps` is for tests only (test/doubles/fake-bin.js): the shipped bin passes none.

import { readFile } from 'node:fs/promises';
import { nativeEngineFactory, type EngineFactory } from '../sidecar/engine/factory.js';
import { CheckpointError } from '../sidecar/model/safetensors.js';
import { packagePath } from '../sidecar/package-root.js';
import { parseArgs, UsageError } from './args.js';
import { buildConfig } from './config.js';
import { helpText } from './flags.js';
import { runGatewayRole } from './gateway-role.js';
import { runBenchServe } from './bench-serve/run.js';
import { createLogger } from './logger.js';
import { startLoopProbeFromEnv } from './loop-probe.js';
import { runMonitor } from './monitor.js';
import { runServe } from './serve.js';
import { runSidecarRole } from './sidecar-role.js';

const BIN = packagePath('bin', 'ernie-edge.js');

async function version(): Promise<string> {
  const pkg = JSON.parse(await readFile(packagePath('package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

export interface MainDeps {
  /** The sidecar's engine; default the native one. */
  engineFactory?: EngineFactory;
  /** The script `serve` runs again (with --role sidecar) for its sidecar child; default bin/ernie-edge.js. */
  bin?: string;
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, deps: MainDeps = {}): Promise<number> {
  // `monitor` and `bench serve` have their own flag tables (./monitor-args.ts, ./bench-serve/args.ts),
  // read by the same parser; everything else is `serve`'s.
  if (argv[0] === 'monitor') return runMonitor(argv.slice(1));
  if (argv[0] === 'bench') {
    if (argv[1] === 'serve') return runBenchServe(argv.slice(2), env);
    process.stderr.write(`ernie-edge: ${argv[1] === undefined ? '`bench` needs a benchmark' : `unknown benchmark '${argv[1]}'`}; the one there is: \`bench serve\` (bench serve --help)\n`);
    return 2;
  }
  let args, cfg;
  try {
    args = parseArgs(argv, env);
    if (args.flags.help === true || args.command === 'help') {
      process.stdout.write(`${helpText(await version())}\n`);
      return 0;
    }
    if (args.flags.version === true) {
      process.stdout.write(`${await version()}\n`);
      return 0;
    }
    if (args.command !== 'serve') throw new UsageError(`unknown command '${args.command}'; the commands are \`serve\`, \`monitor\` and \`bench serve\` (see --help)`);
    cfg = buildConfig(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`ernie-edge: ${err.message}\n`);
    return 2;
  }
  const logger = createLogger(cfg.role === 'serve' ? 'gateway' : cfg.role, cfg.logLevel);
  for (const note of cfg.notes) logger.info({}, note);
  startLoopProbeFromEnv(env, logger); // tests and benchmarks only (./loop-probe.ts)
  try {
    if (cfg.role === 'sidecar') return await runSidecarRole(cfg, env, logger, deps.engineFactory ?? nativeEngineFactory);
    if (cfg.role === 'gateway') return await runGatewayRole(cfg, args, env, logger, deps.bin ?? BIN);
    return await runServe(cfg, args, env, logger, deps.bin ?? BIN);
  } catch (err) {
    // Expected failures (a model that is not there) read as one clear line, not a stack.
    if (err instanceof CheckpointError) logger.error({}, err.message);
    else logger.error({ err: err instanceof Error ? err.stack : String(err) }, 'fatal');
    return 1;
  }
}
