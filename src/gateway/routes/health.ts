// GET /health — liveness: 200 while this process serves HTTP, whatever the engine's state.
// GET /ready — readiness: 200 only when the engine reports ready AND this gateway is not draining;
// otherwise 503 (a load balancer then stops sending traffic). Both stay open without an API key, so
// /ready's message carries no filesystem path (../redact.ts).

import type { AppContext, RouteDeps } from '../deps.js';
import { redactPaths } from '../redact.js';

export function healthHandler() {
  return (c: AppContext) => c.json({ status: 'ok' });
}

export function readyHandler(deps: RouteDeps, isDraining: () => boolean) {
  return async (c: AppContext) => {
    if (isDraining()) return c.json({ status: 'draining', ready: false }, 503);
    try {
      const h = await c.var.engine.health();
      if (h.ready) return c.json({ status: 'ready', ready: true });
      return c.json({ status: h.loading ? 'loading' : h.draining ? 'engine draining' : 'not ready', ready: false, message: h.message ? redactPaths(h.message) : null }, 503);
    } catch (err) {
      // A probe answers, it doesn't fail: an unreachable engine is simply "not ready".
      return c.json({ status: 'engine unavailable', ready: false, message: (err as Error).message ? redactPaths((err as Error).message) : null }, 503);
    }
  };
}
