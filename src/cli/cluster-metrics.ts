// /metrics with several gateway processes (`--api-server-count`): one GatewayMetrics in the primary
// holds every process's observations (each finished request is sent to it), and a scrape answered by
// any process renders from it. So every series is the sum over the processes, whichever one the
// scrape lands on, as vLLM's API servers aggregate theirs (Prometheus multiprocess mode); the engine
// series come from the one sidecar, asked by the scraped process, and are not summed.
import { GatewayMetrics, type MetricsSink } from '../gateway/metrics.js';
import type { FinishedRequest } from '../gateway/request-record.js';
import type { EngineStats } from '../protocol/engine-client.js';
import { isMessage, type PrimaryMessage, type WorkerMessage } from './cluster-messages.js';

/** The channel to the primary: a cluster worker's `process`. */
export interface PrimaryChannel {
  send?(message: WorkerMessage): boolean;
  on(event: 'message', listener: (m: unknown) => void): unknown;
}

/** A gateway process's metrics: observations go to the primary, scrapes are rendered there. */
export class ClusterMetrics implements MetricsSink {
  private seq = 0;
  private readonly waiting = new Map<number, (text: string) => void>();
  private modelName: string | null = null;

  constructor(private readonly primary: PrimaryChannel) {
    primary.on('message', (m) => {
      if (!isMessage<PrimaryMessage>(m) || m.type !== 'metrics.text') return;
      this.waiting.get(m.seq)?.(m.text);
      this.waiting.delete(m.seq);
    });
  }

  setModelName(name: string): void {
    if (name === this.modelName) return; // set on every model resolution: tell the primary once
    this.modelName = name;
    this.primary.send?.({ type: 'metrics.model', name });
  }

  observe(request: FinishedRequest): void {
    this.primary.send?.({ type: 'metrics.observe', request });
  }

  render(stats: EngineStats | null): Promise<string> {
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.waiting.set(seq, resolve);
      this.primary.send?.({ type: 'metrics.render', seq, stats });
    });
  }
}

/** The primary's side: answers one worker's metrics message; returns the reply to send, if any. */
export function handleMetricsMessage(metrics: GatewayMetrics, m: WorkerMessage): PrimaryMessage | null {
  switch (m.type) {
    case 'metrics.observe':
      metrics.observe(m.request);
      return null;
    case 'metrics.model':
      metrics.setModelName(m.name);
      return null;
    case 'metrics.render':
      return { type: 'metrics.text', seq: m.seq, text: metrics.render(m.stats) };
    default:
      return null;
  }
}
