// createApp: the runtime-agnostic Hono app (no node:* anywhere in src/gateway). Runtimes only choose
// the EngineClient and serve `handle.fetch`: Node (src/cli/node-server.ts, entry adapters/node.ts) one
// client for the app; Workers (adapters/workers.ts) one per request, in fetch's env (`{ engine }`).
//
// Middleware order: request record (id, log line, metrics) → CORS → auth (API routes only) → route.
// Every failure goes through app.onError → errors.ts, the one mapping to HTTP.

import { Hono, type Handler } from 'hono';
import type { EngineClient } from '../protocol/engine-client.js';
import { silentLogger, type Logger } from '../protocol/logger.js';
import type { Tracer } from '../protocol/trace.js';
import { bearerAuth } from './auth.js';
import { DEFAULT_MAX_BODY_BYTES, type BodyParser } from './body.js';
import { corsMiddleware } from './cors.js';
import type { AppEnv, RequestBindings, RouteDeps } from './deps.js';
import { ApiError, toHttpError } from './errors.js';
import { GatewayMetrics, type MetricsSink } from './metrics.js';
import { CLIENT_CLOSED_REQUEST, RequestRecord, type FinishedRequest } from './request-record.js';
import { chatHandler } from './routes/chat.js';
import { completionsHandler } from './routes/completions.js';
import { healthHandler, readyHandler } from './routes/health.js';
import { metricsHandler } from './routes/metrics.js';
import { embeddingsHandler, versionHandler } from './routes/probes.js';
import { createResponseHandler, deleteResponseHandler, retrieveResponseHandler } from './routes/responses.js';
import { getModelHandler, listModelsHandler } from './routes/models.js';
import { detokenizeHandler, tokenizeHandler } from './routes/tokenize.js';
import { uiAssetHandler, uiPageHandler } from './routes/ui.js';
import { DEFAULT_TOOL_CALL_PARSER, TOOL_CALL_PARSERS, toolCallParser } from './tools/parser.js';

export interface CreateAppOptions {
  /**
   * The EngineClient every request uses. Left out where each request brings its own through
   * `fetch(req, { engine })` (Workers: a connection belongs to the request that opened it).
   */
  engine?: EngineClient;
  /** When set, API routes require `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** CORS: allowed origins ('*' for any). Unset: no CORS headers (same-origin only). */
  allowedOrigins?: string[] | '*';
  /** The model name clients send and see; default: the engine's model id. */
  servedModelName?: string;
  /** Request body limit, enforced while reading. Default 4 MiB. */
  maxBodyBytes?: number;
  /** Parses large bodies off the serving thread (./body.ts: BodyParser); default: on it. */
  parseLargeBody?: BodyParser;
  /** A stream whose client reads nothing for this long is aborted (0: never). Default DEFAULT_STREAM_STALL_TIMEOUT_MS. */
  streamStallTimeoutMs?: number;
  /** pino-compatible logger; default silent. */
  logger?: Logger;
  metrics?: MetricsSink;
  /** Clock in ms (tests); default Date.now. */
  now?: () => number;
  /** Serve the chat page at `/` (assets under /ui/). Default true; false for API-only deployments. */
  chatUi?: boolean;
  /** Stage marks of generation requests (bench:serve's latency breakdown); default none. */
  tracer?: Tracer;
  /** --tool-call-parser: the call format of tool calls (src/gateway/tools/parser.ts); default hermes. */
  toolCallParser?: string;
  /** --enable-auto-tool-choice: tool_choice auto (the default with tools) is served; default false, as vLLM. */
  enableAutoToolChoice?: boolean;
}

export interface AppHandle {
  app: Hono<AppEnv>;
  /**
   * Serves one request. `env` is the runtime's (Hono's env, fetch's usual second argument): where it
   * is RequestBindings with an engine, that engine serves this request instead of the app's (closing
   * it is the caller's); anything else in it (@hono/node-server's own bindings) is ignored here.
   */
  fetch: (req: Request, env?: RequestBindings | object) => Response | Promise<Response>;
  metrics: MetricsSink;
  /** While draining, /ready answers 503 (in-flight and new requests are still served). */
  setDraining(draining: boolean): void;
  readonly draining: boolean;
  /**
   * While this process warms its own request path (src/cli/http-warm-up.ts), /ready answers 503
   * 'warming up' (requests are still served, only slower).
   */
  setWarming(warming: boolean): void;
  readonly warming: boolean;
}

/**
 * Default of --stream-stall-timeout: nginx's send_timeout. Long enough for any client that reads at all
 * (a paused stream costs only its KV blocks and a bounded buffer), short enough to return the blocks
 * of one that never will.
 */
export const DEFAULT_STREAM_STALL_TIMEOUT_MS = 60_000;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function createApp(opts: CreateAppOptions): AppHandle {
  const logger = opts.logger ?? silentLogger;
  const metrics = opts.metrics ?? new GatewayMetrics();
  const now = opts.now ?? Date.now;
  const parserName = opts.toolCallParser ?? DEFAULT_TOOL_CALL_PARSER;
  const parser = toolCallParser(parserName);
  if (!parser) throw new Error(`unknown tool-call parser '${parserName}' (known: ${TOOL_CALL_PARSERS.join(', ')})`);
  const deps: RouteDeps = {
    tools: { parser, autoToolChoice: opts.enableAutoToolChoice ?? false },
    maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    parseLargeBody: opts.parseLargeBody,
    now,
    servedModelName: opts.servedModelName,
    metrics,
    streamStallTimeoutMs: opts.streamStallTimeoutMs ?? DEFAULT_STREAM_STALL_TIMEOUT_MS,
    onStreamStall: (reqId, stalledMs) =>
      logger.warn({ reqId, stalledMs: Math.round(stalledMs) }, 'stream aborted: its client read nothing for the stall timeout (--stream-stall-timeout)'),
  };
  let draining = false;
  let warming = false;
  if (opts.servedModelName) metrics.setModelName(opts.servedModelName);

  const finished = (r: FinishedRequest) => {
    metrics.observe(r);
    const line = {
      reqId: r.id,
      method: r.method,
      route: r.route,
      status: r.status,
      promptTokens: r.promptTokens,
      outputTokens: r.outputTokens,
      ttftMs: r.ttft === null ? null : Math.round(r.ttft * 1000),
      durationMs: Math.round(r.e2e * 1000),
    };
    // /ready's (and /ping's) 503 is its answer while loading or draining (every probe asks), not a failure.
    if (r.status >= 500 && !((r.route === '/ready' || r.route === '/ping') && r.status === 503)) logger.error(line, 'request failed');
    else logger.info(line, r.status === CLIENT_CLOSED_REQUEST ? 'client closed request' : 'request');
  };

  const app = new Hono<AppEnv>();
  app.use('*', async (c, next) => {
    const given = c.req.header('x-request-id');
    const id = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    // The gateway's own warm-up requests (RequestBindings.internal) leave no metric, log line or trace.
    const internal = (c.env as RequestBindings | undefined)?.internal === true;
    const rec = internal ? new RequestRecord(id, c.req.method, now, () => undefined) : new RequestRecord(id, c.req.method, now, finished, opts.tracer, c.req.raw.signal);
    c.set('rec', rec);
    await next();
    c.res.headers.set('x-request-id', id);
    // Streams end their record when the body finishes; a stream that failed before starting did not.
    if (!rec.streaming || c.res.status !== 200) rec.end(c.res.status);
    else rec.status = 200;
  });
  if (opts.allowedOrigins) app.use('*', corsMiddleware(opts.allowedOrigins));

  // Every route is registered through `route`, which labels the request record for logs and metrics
  // and sets the request's engine: the one it brought in fetch's env, else the app's. Handlers are built
  // once, here; per request there is only that lookup. A path with several methods is registered once
  // with all of them (`routes`), so its 405 fallback comes after every one.
  type Method = 'GET' | 'POST' | 'DELETE';
  type Make = (deps: RouteDeps) => Handler<AppEnv>;
  const routes = (path: string, byMethod: Partial<Record<Method, Make>>) => {
    const methods = Object.keys(byMethod) as Method[];
    for (const method of methods) {
      const handler = byMethod[method]!(deps);
      app.on(method, path, async (c, next) => {
        c.get('rec').route = path;
        const engine = (c.env as RequestBindings | undefined)?.engine ?? opts.engine;
        if (!engine) throw new Error('no EngineClient: createApp was given none and the request brought none');
        c.set('engine', engine);
        return handler(c, next);
      });
    }
    const allow = methods.join(', ');
    app.all(path, (c) => {
      c.get('rec').route = path;
      throw new ApiError(405, `Method ${c.req.method} is not allowed on ${path}; use ${methods.join(' or ')}.`, 'method_not_allowed', null, { allow });
    });
  };
  const route = (method: Method, path: string, make: Make) => routes(path, { [method]: make });
  const state = { draining: () => draining, warming: () => warming };
  route('GET', '/health', () => healthHandler());
  route('GET', '/ready', (deps) => readyHandler(deps, state));
  route('GET', '/ping', (deps) => readyHandler(deps, state));
  route('GET', '/version', () => versionHandler());
  route('GET', '/metrics', metricsHandler);
  if (opts.chatUi ?? true) {
    // Outside auth: the page itself holds no data; it asks for the key when the API answers 401.
    route('GET', '/', () => uiPageHandler());
    route('GET', '/ui/:file', () => uiAssetHandler());
  }

  if (opts.apiKey) {
    const auth = bearerAuth(opts.apiKey);
    for (const path of ['/v1/*', '/tokenize', '/detokenize']) app.use(path, auth);
  }
  route('POST', '/v1/chat/completions', chatHandler);
  route('POST', '/v1/completions', completionsHandler);
  route('POST', '/v1/responses', createResponseHandler);
  routes('/v1/responses/:id', { GET: retrieveResponseHandler, DELETE: deleteResponseHandler });
  route('GET', '/v1/models', listModelsHandler);
  route('GET', '/v1/models/:id{.+}', getModelHandler);
  route('POST', '/tokenize', tokenizeHandler);
  route('POST', '/detokenize', detokenizeHandler);
  route('POST', '/v1/embeddings', () => embeddingsHandler());

  app.notFound(() => {
    throw new ApiError(404, 'Not found: no such route.', 'not_found');
  });
  app.onError((err, c) => {
    const e = toHttpError(err);
    if (e.internal) logger.error({ reqId: c.get('rec')?.id, err: err instanceof Error ? err.stack : String(err) }, 'unhandled error');
    return c.json(e.body, e.status as 400, e.headers);
  });

  return {
    app,
    fetch: (req, env) => app.fetch(req, env),
    metrics,
    setDraining: (d) => {
      draining = d;
    },
    get draining() {
      return draining;
    },
    setWarming: (w) => {
      warming = w;
    },
    get warming() {
      return warming;
    },
  };
}
