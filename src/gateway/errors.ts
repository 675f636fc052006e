// THE one place that maps failures to HTTP: EngineErrorCode, request validation, body problems and
// unexpected exceptions → status + OpenAI's error body `{error: {message, type, param, code}}`.
// Handlers throw ApiError/EngineError/ZodError (or anything, for bugs); app.onError calls toHttpError.
// Mid-stream failures use the same mapping for the SSE `data: {"error": …}` event.

import { z } from 'zod';
import { EngineError, type EngineErrorCode } from '../protocol/engine-client.js';

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** A failure with a known HTTP meaning. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, param: string | null = null, code = 'invalid_request') =>
  new ApiError(400, message, code, param);

const ENGINE_STATUS: Record<EngineErrorCode, { status: number; code: string; headers?: Record<string, string> }> = {
  INVALID_REQUEST: { status: 400, code: 'invalid_request' },
  QUEUE_FULL: { status: 429, code: 'rate_limit_exceeded', headers: { 'retry-after': '1' } },
  NOT_READY: { status: 503, code: 'engine_not_ready', headers: { 'retry-after': '5' } },
  ENGINE_DEAD: { status: 503, code: 'engine_unavailable', headers: { 'retry-after': '5' } },
  INTERNAL: { status: 500, code: 'internal_error' },
};

function typeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return status === 503 ? 'service_unavailable_error' : 'server_error';
  return 'invalid_request_error';
}

/** `messages.0.content` → `messages[0].content` (OpenAI's param spelling). */
export function paramPath(path: readonly PropertyKey[]): string | null {
  if (path.length === 0) return null;
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}

export interface HttpError {
  status: number;
  body: OpenAIErrorBody;
  headers: Record<string, string>;
  /** True for failures that indicate a bug in this server (logged at error level). */
  internal: boolean;
}

export function toHttpError(err: unknown): HttpError {
  let status: number;
  let message: string;
  let code: string | null;
  let param: string | null = null;
  let headers: Record<string, string> = {};
  if (err instanceof ApiError) {
    ({ status, message, code, param, headers } = err);
  } else if (err instanceof EngineError) {
    const m = ENGINE_STATUS[err.code] ?? ENGINE_STATUS.INTERNAL;
    ({ status, code } = m);
    headers = m.headers ?? {};
    message = err.message;
    param = err.param;
  } else if (err instanceof z.ZodError) {
    const issue = err.issues[0];
    status = 400;
    code = 'invalid_request';
    param = issue ? paramPath(issue.path) : null;
    message = issue ? `${param ?? 'body'}: ${issue.message}` : 'invalid request';
  } else {
    status = 500;
    code = 'internal_error';
    message = 'internal server error';
  }
  return { status, headers, internal: status === 500, body: { error: { message, type: typeFor(status), param, code } } };
}
