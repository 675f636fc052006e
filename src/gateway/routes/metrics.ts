// GET /metrics — Prometheus text. Engine series come from engine.stats() at scrape time; if the
// engine does not answer, the scrape still succeeds (vllm:engine_up 0) so gateway series keep flowing.

import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';

export function metricsHandler(deps: RouteDeps) {
  return async (c: AppContext) => {
    // Resolving the model also sets the metrics' model_name label.
    const [stats] = await Promise.all([c.var.engine.stats().catch(() => null), resolveModel(c.var.engine, deps, undefined).catch(() => null)]);
    return c.body(await deps.metrics.render(stats), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  };
}
