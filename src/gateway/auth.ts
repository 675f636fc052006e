// Bearer-token auth for the API routes. /health, /ready and /metrics are registered outside it (probes
// and scrapers carry no key), and CORS preflights are answered before it.

import type { MiddlewareHandler } from 'hono';
import { constantTimeEqual } from '../protocol/messages.js';
import type { AppEnv } from './deps.js';
import { ApiError } from './errors.js';

export function bearerAuth(apiKey: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    // Constant-time on the key itself, so response timing does not reveal how much of a guess matched.
    if (!match || !constantTimeEqual(match[1]!, apiKey)) {
      throw new ApiError(
        401,
        match ? 'Incorrect API key provided.' : "You didn't provide an API key. Pass it as 'Authorization: Bearer <key>'.",
        'invalid_api_key',
        null,
        { 'www-authenticate': 'Bearer' },
      );
    }
    await next();
  };
}
