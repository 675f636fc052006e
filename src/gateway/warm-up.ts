// The gateway's warm-up, before it listens: the first request through a fresh process pays for V8
// compiling every function on its path, zod compiling its validators and Hono building its router
// (~15 ms measured on the 2-core bench machine, bench:serve's cold-start stages). Here those costs are
// paid on requests that touch nothing real: a throwaway app over the in-memory FakeEngine (its own
// metrics, no logger), and the real app's router is built by one match() — no request reaches the real
// engine, the metrics or the log. The sidecar warms its own side (src/sidecar/server/warm-up.ts).

import { FakeEngine } from '../protocol/fake-engine.js';
import { createApp, type AppHandle } from './app.js';

const REQUESTS: [string, Record<string, unknown>][] = [
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'warm-up' }], max_tokens: 2, logprobs: true, stream: true, stream_options: { include_usage: true } }],
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'warm-up' }], max_tokens: 2 }],
  ['/v1/completions', { prompt: [1, 2, 3], max_tokens: 2, logprobs: 1, stream: true }],
  ['/v1/completions', { prompt: 'warm-up', max_tokens: 2 }],
];

/** Resolves with how many warm-up requests answered 200; never throws (a failed warm-up only costs speed). */
export async function warmUpGateway(handle: AppHandle): Promise<number> {
  handle.app.router.match('POST', '/v1/chat/completions');
  const { fetch } = createApp({ engine: new FakeEngine(), chatUi: false });
  let ok = 0;
  for (const [path, body] of REQUESTS) {
    const json = JSON.stringify(body);
    const headers = { 'content-type': 'application/json', 'content-length': String(new TextEncoder().encode(json).length) };
    try {
      const res = await fetch(new Request(`http://warm-up${path}`, { method: 'POST', headers, body: json }));
      await res.arrayBuffer();
      if (res.status === 200) ok++;
    } catch {
      // Nothing to do: the real requests will simply be the first ones.
    }
  }
  return ok;
}
