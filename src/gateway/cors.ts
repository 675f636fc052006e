// CORS for browser clients on other origins (`--allowed-origins`). Written here rather than with
// hono/cors because the preflight must allow exactly the headers a browser client asks for: openai-node
// sends x-stainless-* (os, arch, runtime, retry-count, timeout, …), OpenAI-Organization, OpenAI-Project
// and more with every version, so a fixed list blocks it; hono/cors either sends a fixed list or echoes
// the request's list unchecked, for any origin.
//
// Preflight (OPTIONS with Access-Control-Request-Method): for an allowed origin, 204 with the origin,
// the methods, and the requested headers that are well-formed header names (at most MAX_HEADERS of
// them); for any other origin, 204 without CORS headers (the browser then refuses the call).
// Other requests: the allowed origin and the response headers clients read are exposed.

import type { MiddlewareHandler } from 'hono';

const ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';
/** Read by openai-node (request id, retry decisions) and the AI SDK; Content-Type is always readable. */
const EXPOSE_HEADERS = 'X-Request-Id, Retry-After, Retry-After-Ms, X-Should-Retry';
const MAX_HEADERS = 64;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;

export function corsMiddleware(origins: string[] | '*'): MiddlewareHandler {
  const allowed = (origin: string | undefined): string | null => {
    if (!origin) return null;
    if (origins === '*') return '*';
    return origins.includes(origin) ? origin : null;
  };
  const vary = origins === '*' ? [] : ['Origin'];
  return async (c, next) => {
    const origin = allowed(c.req.header('origin'));
    if (c.req.method === 'OPTIONS' && c.req.header('access-control-request-method')) {
      const headers = new Headers();
      if (origin) {
        headers.set('Access-Control-Allow-Origin', origin);
        headers.set('Access-Control-Allow-Methods', ALLOW_METHODS);
        const asked = requestedHeaders(c.req.header('access-control-request-headers'));
        if (asked.length > 0) headers.set('Access-Control-Allow-Headers', asked.join(', '));
        headers.set('Access-Control-Max-Age', '600');
      }
      headers.set('Vary', [...vary, 'Access-Control-Request-Method', 'Access-Control-Request-Headers'].join(', '));
      return new Response(null, { status: 204, headers });
    }
    await next();
    if (origin) {
      c.res.headers.set('Access-Control-Allow-Origin', origin);
      c.res.headers.set('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    }
    if (vary.length > 0) c.res.headers.append('Vary', 'Origin');
  };
}

/** The well-formed names of an Access-Control-Request-Headers list, lower-cased, deduplicated. */
function requestedHeaders(list: string | undefined): string[] {
  if (!list) return [];
  const names = new Set<string>();
  for (const raw of list.split(',')) {
    const name = raw.trim().toLowerCase();
    if (HEADER_NAME.test(name)) names.add(name);
    if (names.size >= MAX_HEADERS) break;
  }
  return [...names];
}
