// The gateway's warm-up, before it listens: the first request through a fresh process pays for Hono
// building its router, zod compiling its validators and V8 compiling the body reader (bench:serve's
// cold-start stages measure it). Here those costs are paid on the real app's own pieces without a
// request: the router matches every generation route once, and sample bodies go through the same body
// reader and request schemas the handlers use. Nothing reaches the engine, the metrics or the log; no
// stand-in engine exists in production. The sidecar warms its own side (src/sidecar/server/warm-up.ts).

import type { z } from 'zod';
import type { AppHandle } from './app.js';
import { DEFAULT_MAX_BODY_BYTES, readJsonBody } from './body.js';
import { chatRequestSchema, completionRequestSchema, detokenizeRequestSchema, tokenizeRequestSchema } from './schemas.js';

/** [route, the schema its handler parses with, a body it accepts]: the request shapes worth warming. */
const SAMPLES: [string, z.ZodType, Record<string, unknown>][] = [
  ['/v1/chat/completions', chatRequestSchema, { messages: [{ role: 'user', content: 'warm-up' }], max_tokens: 2, logprobs: true, stream: true, stream_options: { include_usage: true } }],
  ['/v1/chat/completions', chatRequestSchema, { messages: [{ role: 'user', content: 'warm-up' }], max_tokens: 2 }],
  ['/v1/completions', completionRequestSchema, { prompt: [1, 2, 3], max_tokens: 2, logprobs: 1, stream: true }],
  ['/v1/completions', completionRequestSchema, { prompt: 'warm-up', max_tokens: 2 }],
  ['/tokenize', tokenizeRequestSchema, { prompt: 'warm-up' }],
  ['/detokenize', detokenizeRequestSchema, { tokens: [1, 2, 3] }],
];

/**
 * Resolves with how many sample bodies were read and accepted by their schema; never throws (a failed
 * warm-up only costs speed).
 */
export async function warmUpGateway(handle: AppHandle): Promise<number> {
  let ok = 0;
  for (const [path, schema, body] of SAMPLES) {
    try {
      handle.app.router.match('POST', path);
      const json = JSON.stringify(body);
      const headers = { 'content-type': 'application/json', 'content-length': String(new TextEncoder().encode(json).length) };
      const parsed = await readJsonBody(new Request(`http://warm-up${path}`, { method: 'POST', headers, body: json }), DEFAULT_MAX_BODY_BYTES);
      if (schema.safeParse(parsed).success) ok++;
    } catch {
      // Nothing to do: the real requests will simply be the first ones.
    }
  }
  return ok;
}
