// The images' HEALTHCHECK (docker/podman; Kubernetes uses the manifests' probes instead). Healthy means
// the role's readiness: exit 0 when ready, 1 otherwise.
//   ERNIE_EDGE_ROLE all | gateway  GET /ready on the gateway's port (ERNIE_EDGE_PORT, default 8000)
//   ERNIE_EDGE_ROLE sidecar        the engine protocol's health on ERNIE_EDGE_ENGINE_SOCKET (default
//                                  /run/ernie/engine.sock, the manifests' path): ready = model loaded
// Runs from the image's compiled tree (/app/dist), never from a checkout.
import { createUnixEngineClient } from '../dist/src/protocol/node-socket.js';

const TIMEOUT_MS = 2500; // below the HEALTHCHECK's --timeout, so a hung peer reads as unhealthy here

async function ready() {
  if (process.env.ERNIE_EDGE_ROLE === 'sidecar') {
    const client = createUnixEngineClient(process.env.ERNIE_EDGE_ENGINE_SOCKET || '/run/ernie/engine.sock');
    try {
      return (await client.health()).ready;
    } finally {
      await client.close();
    }
  }
  const res = await fetch(`http://127.0.0.1:${process.env.ERNIE_EDGE_PORT || 8000}/ready`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  return res.ok;
}

const timer = setTimeout(() => process.exit(1), TIMEOUT_MS);
const ok = await ready().catch(() => false);
clearTimeout(timer);
process.exit(ok ? 0 : 1);
