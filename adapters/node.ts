// The Node runtime adapter: the entry bin/ernie-edge.js runs (under tsx). On Node the gateway app
// (src/gateway/app.ts) gets a Unix-socket or TCP EngineClient chosen by --engine and is served by
// @hono/node-server (src/cli/node-server.ts); `serve` also spawns the sidecar. That composition is
// the CLI's (src/cli/main.ts); this file only starts it, so the runtime is chosen in one place, the
// entry: this file for Node, adapters/workers.ts for Workers (wrangler.toml's `main`).

import { main } from '../src/cli/main.js';
import { reexecWithServingFlags } from '../src/cli/v8-pool.js';

/** Runs the CLI and exits with its code. */
export async function runNode(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<never> {
  reexecWithServingFlags(argv, env); // `serve` on a small host: again with a smaller V8 pool (src/cli/v8-pool.ts)
  const code = await main(argv, env);
  // Exit explicitly: a drained server may still hold idle handles (timers, a closed client's socket).
  process.exit(code);
}
