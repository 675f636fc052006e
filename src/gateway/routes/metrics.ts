// GET /metrics — Prometheus text. Engine series come from engine.stats() at scrape time; if the
// engine does not answer, the scrape still succeeds (vllm:engine_up 0) so gateway series keep flowing.

import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { SingleFlight } from '../single-flight.js';

export function metricsHandler(deps: RouteDeps) {
  // Scrapes that arrive while one is being made get its text: a burst of /metrics (a client pipelining
  // thousands on one connection, issue #26) costs the sidecar one STATS and the gateway one render at a
  // time, where one each came back in the same turn and held both event loops for tens of milliseconds.
  const scrapes = new SingleFlight<object, string>();
  const scrape = async (engine: AppContext['var']['engine']) => {
    // Resolving the model also sets the metrics' model_name label.
    const [stats] = await Promise.all([engine.stats().catch(() => null), resolveModel(engine, deps, undefined).catch(() => null)]);
    return deps.metrics.render(stats);
  };
  return async (c: AppContext) => {
    const text = await scrapes.run(c.var.engine, () => scrape(c.var.engine));
    return c.body(text, 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  };
}
