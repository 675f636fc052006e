// The V8 platform's worker pool of the serving processes (gateway and sidecar). Node starts 4 such
// threads whatever the host (its --v8-pool-size default); they run the garbage collector's parallel
// and concurrent phases and background compilation. On a small host they outnumber the cores: while a
// request's first step computes, a scavenge in the gateway or the sidecar wakes up to 4 helpers that
// preempt the engine's step threads (measured with `npm run bench:serve --sched` on a 2-core host; the
// A/B with a pool of one is bench/results/serve-v8-pool.json). So a serving process gets one pool
// thread per CORES_PER_POOL_THREAD available cores (cgroup quota respected), at least 1, at most
// Node's own 4: on 16 cores and more nothing changes.
//
// The pool size is fixed when V8 starts (V8 freezes its flags after start-up, so v8.setFlagsFromString
// cannot change it later), so it is a node flag: children get it in their execArgv (the sidecar,
// cluster gateways); the process the user started re-executes itself with it where the runtime has
// process.execve (Node 22.15+, 23.11+), keeping its pid (a container's PID 1 stays PID 1). A pool size
// the user chose (in NODE_OPTIONS or the node command line) wins.

import { parseArgs } from './args.js';
import { availableCores } from './cpu-budget.js';

/** Node's default --v8-pool-size (src/node_options.h: v8_thread_pool_size 4). */
export const NODE_DEFAULT_POOL = 4;
/** Available cores per V8 pool thread (the same share as a default gateway process, ./cpu-budget.ts). */
export const CORES_PER_POOL_THREAD = 4;

const POOL_FLAG = /(^|\s)--v8-pool-size(=|\s|$)/;
const POOL_ARG = /^--v8-pool-size(=|$)/;

/** The pool size for a serving process on `cores` available cores. */
export function servingPoolSize(cores: number): number {
  return Math.min(NODE_DEFAULT_POOL, Math.max(1, Math.floor(cores / CORES_PER_POOL_THREAD)));
}

/**
 * The node flags that set a serving process's pool: the pool flag of `execArgv` when it has one (the
 * user's choice, or this process's own after its re-exec), none when NODE_OPTIONS sets it (children
 * inherit that), else `--v8-pool-size=N` for this host unless N is Node's default. A child serving
 * process (the sidecar) starts with these before its script.
 */
export function servingPoolFlags(execArgv: readonly string[], nodeOptions: string | undefined, cores: number = availableCores()): string[] {
  if (POOL_FLAG.test(nodeOptions ?? '')) return [];
  const i = execArgv.findIndex((a) => POOL_ARG.test(a));
  if (i >= 0) return execArgv[i]!.includes('=') ? [execArgv[i]!] : execArgv.slice(i, i + 2);
  const n = servingPoolSize(cores);
  return n === NODE_DEFAULT_POOL ? [] : [`--v8-pool-size=${n}`];
}

/** The execArgv of a forked serving process (a cluster gateway): this process's, with the pool flags. */
export function servingExecArgv(execArgv: readonly string[], nodeOptions: string | undefined, cores?: number): string[] {
  return execArgv.some((a) => POOL_ARG.test(a)) ? [...execArgv] : [...execArgv, ...servingPoolFlags(execArgv, nodeOptions, cores)];
}

/** Whether argv is a `serve` command that will serve (not --help, --version or a usage error). */
function serves(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  try {
    const args = parseArgs(argv, env);
    return args.command === 'serve' && args.flags.help !== true && args.flags.version !== true;
  } catch {
    return false; // main() reports the usage error
  }
}

type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/**
 * For the entry scripts (bin/ernie-edge.js, the tests' fake bin), before main(): when argv serves and
 * the pool should differ from Node's default, replace this process with the same command plus the
 * flag. Returns (nothing changed) when it need not or cannot: no process.execve (Node 20, 22.14 and
 * older), the flag already there, or not `serve`.
 */
export function reexecWithServingFlags(argv: readonly string[], env: NodeJS.ProcessEnv): void {
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (typeof execve !== 'function' || !serves(argv, env)) return;
  if (process.execArgv.some((a) => POOL_ARG.test(a))) return;
  const flags = servingPoolFlags(process.execArgv, env.NODE_OPTIONS);
  if (flags.length === 0) return;
  execve(process.execPath, [process.execPath, ...process.execArgv, ...flags, ...process.argv.slice(1)], env);
}
