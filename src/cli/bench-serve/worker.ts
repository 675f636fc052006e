// A client thread of `bench serve` (./executor.ts workerExecutor): sends the requests the main thread
// hands it over its own keep-alive agent and posts each result back whole.

import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import type { BenchPrompt } from './dataset.js';
import { keepAliveAgent, sendRequest, type RequestConfig, type RequestResult } from './request.js';

export interface WorkerData {
  cfg: RequestConfig;
  sockets: number;
}
export type WorkerMessage = { t: 'req'; id: number; p: BenchPrompt } | { t: 'elu' };
export type WorkerReply = { t: 'ready' } | { t: 'res'; id: number; r: RequestResult } | { t: 'elu'; v: number };

const port = parentPort;
if (port) {
  const { cfg, sockets } = workerData as WorkerData;
  const agent = keepAliveAgent(cfg.baseUrl, sockets);
  let last = performance.eventLoopUtilization();
  const reply = (m: WorkerReply) => port.postMessage(m);
  port.on('message', (m: WorkerMessage) => {
    if (m.t === 'req') {
      void sendRequest(m.p, cfg, agent).then((r) => reply({ t: 'res', id: m.id, r }));
    } else {
      const now = performance.eventLoopUtilization();
      reply({ t: 'elu', v: performance.eventLoopUtilization(now, last).utilization });
      last = now;
    }
  });
  reply({ t: 'ready' });
}
