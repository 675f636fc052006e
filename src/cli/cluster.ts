// `--api-server-count N` (N > 1): N gateway processes on one HTTP port, all connected to the one
// sidecar, as vLLM's API servers in front of one engine. This process is the primary: it forks the
// gateways (Node's cluster module; each runs `serve --role gateway`), restarts one that dies, owns the
// summed metrics (./cluster-metrics.ts) and drains them all on shutdown. It serves no HTTP itself.
//
// The port: slot 1 binds first (port 0 picks a free one), then the others and every restart join it.
// How connections are spread: where Node has it (22.12+), each process binds its own
// SO_REUSEPORT socket and the kernel spreads connections; elsewhere the primary accepts and hands
// connections out round-robin (the cluster's SCHED_RR). Either way a process that dies takes only its
// own connections with it (the gateway is stateless): the others keep serving while it restarts.

import cluster, { type Worker } from 'node:cluster';
import { GatewayMetrics } from '../gateway/metrics.js';
import { handleMetricsMessage } from './cluster-metrics.js';
import { ENV_LISTEN, ENV_REUSE_PORT, ENV_SLOT, isMessage, type WorkerMessage } from './cluster-messages.js';
import type { CliLogger } from './logger.js';
import type { Listen, NodeGateway } from './node-server.js';
import { servingExecArgv } from './v8-pool.js';

/** How long past the drain timeout a gateway process may take to exit before it gets SIGKILL. */
const EXIT_GRACE_MS = 5000;

export interface GatewayClusterOptions {
  count: number;
  /** The script each gateway runs (bin/ernie-edge.js) and its arguments (`serve --role gateway …`). */
  exec: string;
  args: string[];
  /** Added to each gateway's environment (secrets travel here, never in argv). */
  env: NodeJS.ProcessEnv;
  listen: Listen;
  drainTimeoutMs: number;
  logger: CliLogger;
}

/** Whether this Node binds SO_REUSEPORT sockets (listen's reusePort: 22.12+ and 23.1+). */
export function runtimeHasReusePort(version: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

export async function startGatewayCluster(o: GatewayClusterOptions): Promise<NodeGateway> {
  cluster.schedulingPolicy = cluster.SCHED_RR;
  cluster.setupPrimary({ exec: o.exec, args: o.args, execArgv: servingExecArgv(process.execArgv, o.env.NODE_OPTIONS) });
  const reusePort = runtimeHasReusePort() && !('path' in o.listen);
  const metrics = new GatewayMetrics();
  const workers = new Map<number, Worker>(); // slot → its live process
  const serving = new WeakSet<Worker>(); // those that reported `listening` (they heed `drain`)
  let stopping = false;

  const fork = (slot: number, listen: Listen): Promise<Listen> => {
    const w = cluster.fork({ ...o.env, [ENV_SLOT]: String(slot), [ENV_LISTEN]: JSON.stringify(listen), [ENV_REUSE_PORT]: reusePort ? '1' : '0' });
    workers.set(slot, w);
    let listened = false;
    const started = new Promise<Listen>((resolve, reject) => {
      w.on('message', (m: unknown) => {
        if (!isMessage<WorkerMessage>(m)) return;
        if (m.type === 'listening') {
          listened = true;
          serving.add(w);
          return resolve(m.address);
        }
        const reply = handleMetricsMessage(metrics, m);
        if (reply && w.isConnected()) w.send(reply);
      });
      w.once('exit', (code, signal) => {
        reject(new Error(`gateway process ${slot} exited (${signal ?? code}) before it listened`));
        // One that never listened is not restarted (a bad flag or port would loop): start() fails instead.
        if (workers.get(slot) !== w || stopping || !listened) return;
        workers.delete(slot);
        // A gateway that served and died: start another in its slot (the others serve meanwhile).
        o.logger.warn({ apiServer: slot, pid: w.process.pid, code, signal }, 'gateway process died: restarting it');
        fork(slot, follow).then(
          () => o.logger.info({ apiServer: slot, pid: workers.get(slot)?.process.pid }, 'gateway process restarted'),
          (err: unknown) => o.logger.error({ apiServer: slot, err: (err as Error).message }, 'gateway process could not restart'),
        );
      });
    });
    return started;
  };

  // What later processes listen on. Round-robin: the very same listen arguments as the first (the
  // primary shares its one handle, keyed by them: port 0 stays 0 and means that handle's port).
  // SO_REUSEPORT: the port the first one bound.
  let bound: Listen = o.listen;
  let follow: Listen = o.listen;
  try {
    bound = await fork(1, o.listen);
    if (reusePort) follow = bound;
    await Promise.all(Array.from({ length: o.count - 1 }, (_, i) => fork(i + 2, follow)));
  } catch (err) {
    stopping = true;
    for (const w of workers.values()) w.process.kill('SIGKILL');
    throw err;
  }
  o.logger.info({ apiServers: o.count, balancing: reusePort ? 'SO_REUSEPORT' : 'round-robin' }, 'gateway processes listening');

  let shutdown: Promise<boolean> | null = null;
  const drain = async (): Promise<boolean> => {
    stopping = true;
    const exits = [...workers.values()].map(
      (w) =>
        new Promise<boolean>((resolve) => {
          if (w.process.exitCode !== null) return resolve(w.process.exitCode === 0);
          const timer = setTimeout(() => w.process.kill('SIGKILL'), o.drainTimeoutMs + EXIT_GRACE_MS);
          w.process.once('exit', (code) => {
            clearTimeout(timer);
            resolve(code === 0);
          });
          // One still starting (a restart) may not listen for `drain` yet, and serves nothing: SIGTERM.
          if (w.isConnected() && serving.has(w)) w.send({ type: 'drain' });
          else w.process.kill('SIGTERM');
        }),
    );
    return (await Promise.all(exits)).every(Boolean);
  };
  return { address: bound, shutdown: () => (shutdown ??= drain()) };
}
