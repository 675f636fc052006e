// The CLI entry (bin/ernie-edge.js imports this under tsx): parse, configure, dispatch by role.
// Returns the process exit code: 0 ok, 1 runtime failure, 2 usage error. Never calls process.exit.

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CheckpointError } from '../sidecar/model/safetensors.js';
import { parseArgs, UsageError } from './args.js';
import { buildConfig } from './config.js';
import { helpText } from './flags.js';
import { runGatewayRole } from './gateway-role.js';
import { createLogger } from './logger.js';
import { runMonitor } from './monitor.js';
import { runServe } from './serve.js';
import { runSidecarRole } from './sidecar-role.js';

const BIN = fileURLToPath(new URL('../../bin/ernie-edge.js', import.meta.url));

async function version(): Promise<string> {
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  // `monitor` has its own flag table (./monitor-args.ts), read by the same parser; everything else is `serve`'s.
  if (argv[0] === 'monitor') return runMonitor(argv.slice(1));
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
    if (args.command !== 'serve') throw new UsageError(`unknown command '${args.command}'; the commands are \`serve\` and \`monitor\` (see --help)`);
    cfg = buildConfig(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`ernie-edge: ${err.message}\n`);
    return 2;
  }
  const logger = createLogger(cfg.role === 'serve' ? 'gateway' : cfg.role, cfg.logLevel);
  for (const note of cfg.notes) logger.info({}, note);
  try {
    if (cfg.role === 'sidecar') return await runSidecarRole(cfg, env, logger);
    if (cfg.role === 'gateway') return await runGatewayRole(cfg, env, logger);
    return await runServe(cfg, args, env, logger, BIN);
  } catch (err) {
    // Expected failures (a model that is not there) read as one clear line, not a stack.
    if (err instanceof CheckpointError) logger.error({}, err.message);
    else logger.error({ err: err instanceof Error ? err.stack : String(err) }, 'fatal');
    return 1;
  }
}
