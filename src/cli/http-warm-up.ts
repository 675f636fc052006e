// The gateway process's warm-up through its whole request path, once the engine is ready and before
// /ready turns 200: real HTTP requests (Node's HTTP parser, @hono/node-server, the app, the body reader,
// the schemas, the engine client, the socket to the sidecar, the SSE writer, and back) on a private
// Unix socket in a 0700 directory of its own, served by the same app. Each process of
// `--api-server-count` runs its own (V8's compiled code is per process).
// NOTE: why. A fresh process runs its request path in V8's interpreter and baseline tiers until the
// optimising compilers have its hot functions, so the first requests it serves cost more at every stage
// than later ones (bench/ttft-stages.ts's byIndex, first against last requests; bench/results/ttft-gpu.json).
// src/gateway/warm-up.ts (before listening) only reaches the pieces that need no engine; this one
// drives whole requests.
// The requests are the app's `internal` ones (RequestBindings): no metric, log line or trace. Their
// prompts are shorter than one KV block (the engine's block size, from its cache config) and ask for
// one token, so they leave nothing in the prefix cache (only full blocks are cached). The engine's own
// token counters (vllm:prompt_tokens_total, …) count them, as they count the sidecar's warm-up request
// (src/sidecar/server/warm-up.ts).

import { createAdaptorServer } from '@hono/node-server';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request as httpRequest, type Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AppHandle } from '../gateway/app.js';
import type { RequestBindings } from '../gateway/deps.js';
import type { EngineClient } from '../protocol/engine-client.js';
import { DEFAULT_BLOCK_SIZE } from '../sidecar/engine/plan.js';

/** Default of --api-server-warmup-requests. */
export const DEFAULT_WARMUP_REQUESTS = 200;
/** The warm-up stops here whatever is left: it only buys speed, it must never hold readiness long. */
export const WARMUP_BUDGET_MS = 3_000;
/** Between readiness checks of the engine while it loads (the engine protocol has no ready event). */
const ENGINE_POLL_MS = 100;
/** Prompt tokens of a token-id warm-up request (fewer where blocks are smaller): no block is ever full. */
const PROMPT_TOKENS = 7;
/** The smallest KV block the warm-up's chat prompt (a one-word message in its template) stays under. */
const CHAT_MIN_BLOCK = 16;

export interface HttpWarmUpOptions {
  requests: number;
  /** Bearer key the app requires (--api-key), if any. */
  apiKey?: string;
  budgetMs?: number;
  /** Aborted when the process starts draining: the warm-up stops where it is. */
  signal?: AbortSignal;
  now?: () => number;
}

export interface HttpWarmUpResult {
  /** Requests that completed with a 200. */
  ok: number;
  /** Requests sent (ok or not). */
  sent: number;
  ms: number;
  /** Why it stopped before sending them all: 'budget', 'aborted', or a failed request's status. */
  stoppedBy: string | null;
}

/**
 * The request shapes the warm-up cycles through (the routes and options real clients use most), with
 * prompts shorter than one KV block of `blockSize` tokens: token-id prompts of at most PROMPT_TOKENS ids,
 * and a one-word chat, whose template keeps it under 16 tokens (ERNIE's), only where blocks are that
 * large. Empty when no prompt fits (--block-size 1).
 */
export function warmUpBodies(vocabSize: number, blockSize: number): { path: string; body: Record<string, unknown> }[] {
  const n = Math.min(PROMPT_TOKENS, blockSize - 1);
  if (n < 1) return [];
  // Token ids away from the special ones at the start of every vocabulary, and inside any vocabulary.
  const ids = Array.from({ length: n }, (_, i) => Math.min(vocabSize - 1, 100 + i));
  const one = { max_tokens: 1, temperature: 0 };
  const chat = blockSize >= CHAT_MIN_BLOCK;
  return [
    { path: '/v1/completions', body: { prompt: ids, stream: true, return_token_ids: true, ...one } },
    { path: '/v1/completions', body: { prompt: ids, stream: true, stream_options: { include_usage: true }, ...one } },
    ...(chat ? [{ path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'warm' }], stream: true, ...one } }] : []),
    { path: '/v1/completions', body: { prompt: ids, ...one } },
    ...(chat ? [{ path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'warm' }], ...one } }] : []),
  ];
}

/** Resolves once the engine reports ready, or false when `signal` aborts first. */
export async function engineReady(engine: EngineClient, signal?: AbortSignal): Promise<boolean> {
  while (!signal?.aborted) {
    const ready = await engine.health().then((h) => h.ready, () => false);
    if (ready) return true;
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, ENGINE_POLL_MS);
      signal?.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
      }
    });
  }
  return false;
}

/** One request over the private socket; resolves with its status once the whole response was read. */
function send(socketPath: string, agent: Agent, p: string, body: unknown, apiKey: string | undefined, signal: AbortSignal | undefined): Promise<number> {
  const json = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      // The signal cuts a request in flight: a drain never waits on the warm-up (the app then aborts its engine run).
      { socketPath, path: p, method: 'POST', agent, signal, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json), ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) } },
      (res) => {
        res.on('data', () => undefined);
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(json);
  });
}

/**
 * Sends up to `o.requests` warm-up requests through `handle`'s app, one at a time (the path a lone
 * request takes), on a private socket. Never throws: a failed warm-up only costs speed.
 */
export async function warmUpThroughHttp(handle: AppHandle, engine: EngineClient, o: HttpWarmUpOptions): Promise<HttpWarmUpResult> {
  const now = o.now ?? (() => performance.now());
  const t0 = now();
  let ok = 0;
  let sent = 0;
  const end = (stoppedBy: string | null): HttpWarmUpResult => ({ ok, sent, ms: now() - t0, stoppedBy });
  if (o.requests <= 0) return end(null);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ernie-edge-warm-'));
  const socketPath = path.join(dir, 'http.sock');
  const internal: RequestBindings = { internal: true };
  const server = createAdaptorServer({ fetch: (req: Request) => handle.fetch(req, internal) }) as Server;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, resolve);
    });
    const blockSize = await engine.stats().then((st) => Number(st.cacheConfig?.block_size ?? DEFAULT_BLOCK_SIZE), () => DEFAULT_BLOCK_SIZE);
    const shapes = warmUpBodies((await engine.model()).vocabSize, blockSize);
    if (shapes.length === 0) return end(`no prompt is shorter than a KV block of ${blockSize}`);
    const budget = o.budgetMs ?? WARMUP_BUDGET_MS;
    for (let i = 0; i < o.requests; i++) {
      if (o.signal?.aborted) return end('aborted');
      if (now() - t0 > budget) return end('budget');
      const { path: p, body } = shapes[i % shapes.length]!;
      sent++;
      const status = await send(socketPath, agent, p, body, o.apiKey, o.signal).catch(() => 0);
      if (o.signal?.aborted) return end('aborted');
      if (status !== 200) return end(`status ${status}`);
      ok++;
    }
    return end(null);
  } catch (err) {
    return end((err as Error).message);
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  }
}
