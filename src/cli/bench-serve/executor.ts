// Where a level's requests run: on the main thread, or spread over worker threads when one thread's
// event loop cannot parse the streams fast enough (SSE parsing is per chunk, and at hundreds of streams
// that is the client's hot loop). The runner (./run-level.ts) decides when each request starts in
// both cases, so arrivals and concurrency are the same whatever executes them.

import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { BenchPrompt } from './dataset.js';
import { keepAliveAgent, sendRequest, type RequestConfig, type RequestResult } from './request.js';
import type { WorkerData, WorkerMessage, WorkerReply } from './worker.js';

export interface Executor {
  readonly threads: number;
  send(p: BenchPrompt): Promise<RequestResult>;
  /** Event-loop utilisation (0..1) of each client thread since the previous call (or since start). */
  utilisation(): Promise<number[]>;
  close(): Promise<void>;
}

/** Streams one client thread carries before another is worth its start-up and messages. */
export const STREAMS_PER_WORKER = 64;

/** Default --num-workers for `concurrency` in flight: 1 up to 64, one more per 64, at most half the cores (the rest are the server's when it shares the host). */
export function autoWorkers(concurrency: number): number {
  const cap = Math.max(1, Math.floor(os.availableParallelism() / 2));
  return Math.min(cap, Math.max(1, Math.ceil(concurrency / STREAMS_PER_WORKER)));
}

function eluTracker(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const d = performance.eventLoopUtilization(now, last);
    last = now;
    return d.utilization;
  };
}

export function inlineExecutor(cfg: RequestConfig, sockets: number): Executor {
  const agent = keepAliveAgent(cfg.baseUrl, sockets);
  const elu = eluTracker();
  return {
    threads: 1,
    send: (p) => sendRequest(p, cfg, agent),
    utilisation: async () => [elu()],
    close: async () => agent.destroy(),
  };
}

const clientError = (e: Error): RequestResult => ({ ok: false, status: 'client-error', error: e.message, promptTokens: null, outputTokens: 0, usageReported: false, ttftMs: null, itlMs: [], e2eMs: 0 });

/** The worker's module, started through tsx's loader when this file runs from the TypeScript sources. */
function startWorker(data: WorkerData): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const file = new URL(`./worker.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  if (!fromSource) return new Worker(file, { workerData: data });
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(file.href)}); });`;
  return new Worker(boot, { eval: true, workerData: data });
}

/**
 * `threads` worker threads, each with its own keep-alive agent for its share of the sockets. A
 * request goes to the worker with the fewest in flight; only the prompt goes out and the result
 * comes back, so the main thread does per-request work, never per-chunk work.
 */
export async function workerExecutor(cfg: RequestConfig, sockets: number, threads: number): Promise<Executor> {
  const share = Number.isFinite(sockets) ? Math.ceil(sockets / threads) : Infinity;
  const workers = Array.from({ length: threads }, () => startWorker({ cfg, sockets: share }));
  const inFlight = new Array<number>(threads).fill(0);
  const pending = new Map<number, { k: number; resolve: (r: RequestResult) => void }>();
  const eluWaiters: ((v: number) => void)[][] = workers.map(() => []);
  let nextId = 0;
  let failure: Error | null = null;
  let closing = false; // terminate() makes every worker exit: not a failure
  const mainElu = eluTracker();
  workers.forEach((w, k) => {
    w.on('message', (m: WorkerReply) => {
      if (m.t === 'res') {
        inFlight[k]!--;
        pending.get(m.id)?.resolve(m.r);
        pending.delete(m.id);
      } else if (m.t === 'elu') eluWaiters[k]!.shift()?.(m.v);
    });
    // A worker that dies fails its requests (status 'client-error') instead of leaving them pending.
    const lost = (e: Error) => {
      failure ??= e;
      for (const [id, p] of pending) {
        if (p.k !== k) continue;
        pending.delete(id);
        p.resolve(clientError(e));
      }
      for (const waiter of eluWaiters[k]!.splice(0)) waiter(NaN);
    };
    w.on('error', lost);
    w.on('exit', (code) => closing || lost(new Error(`client worker ${k} exited (${code})`)));
  });
  await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
    w.once('message', (m: WorkerReply) => (m.t === 'ready' ? resolve() : reject(new Error(`worker said ${m.t} before ready`))));
    w.once('error', reject);
  })));
  const post = (k: number, m: WorkerMessage) => workers[k]!.postMessage(m);
  return {
    threads,
    send(p) {
      if (failure) return Promise.resolve(clientError(failure));
      let k = 0;
      for (let j = 1; j < threads; j++) if (inFlight[j]! < inFlight[k]!) k = j;
      inFlight[k]!++;
      const id = nextId++;
      return new Promise<RequestResult>((resolve) => {
        pending.set(id, { k, resolve });
        post(k, { t: 'req', id, p });
      });
    },
    async utilisation() {
      const theirs = await Promise.all(workers.map((_, k) => new Promise<number>((resolve) => {
        eluWaiters[k]!.push(resolve);
        post(k, { t: 'elu' });
      })));
      return [mainElu(), ...theirs];
    },
    async close() {
      closing = true;
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
