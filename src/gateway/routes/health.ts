// GET /health — liveness: 200 while this process serves HTTP, whatever the engine's state.
// GET /ready — readiness: 200 only when the engine reports ready AND this gateway is neither draining
// nor still warming its own request path (src/cli/http-warm-up.ts); otherwise 503 (a load balancer
// then stops, or does not start, sending traffic). Both stay open without an API key, so
// /ready's message carries no filesystem path (../redact.ts).

import type { AppContext, RouteDeps } from '../deps.js';
import { redactPaths } from '../redact.js';

export function healthHandler() {
  return (c: AppContext) => c.json({ status: 'ok' });
}

export interface GatewayState {
  draining: () => boolean;
  warming: () => boolean;
}

export function readyHandler(deps: RouteDeps, state: GatewayState) {
  return async (c: AppContext) => {
    if (state.draining()) return c.json({ status: 'draining', ready: false }, 503);
    try {
      const h = await c.var.engine.health();
      if (h.ready && state.warming()) return c.json({ status: 'warming up', ready: false, message: 'the gateway is warming its request path' }, 503);
      if (h.ready) return c.json({ status: 'ready', ready: true });
      return c.json({ status: h.loading ? 'loading' : h.draining ? 'engine draining' : 'not ready', ready: false, message: h.message ? redactPaths(h.message) : null }, 503);
    } catch (err) {
      // A probe answers, it doesn't fail: an unreachable engine is simply "not ready".
      return c.json({ status: 'engine unavailable', ready: false, message: (err as Error).message ? redactPaths((err as Error).message) : null }, 503);
    }
  };
}
