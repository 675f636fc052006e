// One benchmark request against an OpenAI-compatible server, timed at the client's socket: TTFT from
// writing the request to the arrival of the bytes holding the first token, ITL between the chunks
// that hold tokens, E2E to the end of the response. Output tokens are what the server reports in
// `usage` (stream_options.include_usage on streams); a server that reports none is counted by its
// token-bearing chunks, and the result says which. With `returnTokenIds` (vLLM's `return_token_ids`)
// each chunk names its token ids: a chunk is a token arrival when it has any, also where its text is
// still held back or empty, and the count without usage is exact; the server does no extra work per
// token for it (logprobs would send every step's logits to a host sampler).
//
// NOTE: node:http with a keep-alive agent, not fetch: undici's fetch and web streams cost several
// times more CPU per streamed request, and a client that shares the host with the server takes that
// CPU from it (bench/serve/http.ts measured the same choice).

import http from 'node:http';
import https from 'node:https';
import type { Endpoint } from './args.js';
import type { BenchPrompt } from './dataset.js';

/** What a request needs besides its prompt: the same for every request of a run. */
export interface RequestConfig {
  baseUrl: string;
  endpoint: Endpoint;
  model: string;
  stream: boolean;
  ignoreEos: boolean;
  temperature: number;
  logprobs?: number;
  returnTokenIds?: boolean;
  apiKey?: string;
  timeoutMs: number;
}

export interface RequestResult {
  ok: boolean;
  /** '200' when ok; else the HTTP status, or the error code of a failed connection ('ECONNREFUSED', 'timeout', 'stream-error'). */
  status: string;
  error?: string;
  /** usage.prompt_tokens, or null when the server reported none. */
  promptTokens: number | null;
  outputTokens: number;
  /** Whether outputTokens came from the server's usage (else: token-bearing chunks counted). */
  usageReported: boolean;
  /** ms; on --no-stream, the whole response's latency (the first token arrives with the last). */
  ttftMs: number | null;
  itlMs: number[];
  e2eMs: number;
}

interface Choice {
  text?: string | null;
  delta?: { content?: string | null; reasoning_content?: string | null; tool_calls?: unknown[] | null };
  logprobs?: { tokens?: unknown[]; content?: unknown[] | null } | null;
  finish_reason?: string | null;
  token_ids?: number[] | null;
}
interface Chunk {
  choices?: Choice[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

/** Whether a streamed choice carries output (chat's first chunk may only announce the role). */
const carriesToken = (c: Choice): boolean =>
  !!(c.text || c.delta?.content || c.delta?.reasoning_content || c.delta?.tool_calls?.length || c.logprobs?.tokens?.length || c.logprobs?.content?.length || c.token_ids?.length);

export function requestBody(p: BenchPrompt, cfg: RequestConfig): string {
  const body: Record<string, unknown> = { model: cfg.model, max_tokens: p.outputTokens, temperature: cfg.temperature, stream: cfg.stream };
  if (cfg.endpoint === '/v1/completions') body.prompt = p.prompt;
  else body.messages = [{ role: 'user', content: typeof p.prompt === 'string' ? p.prompt : p.prompt.join(' ') }];
  if (cfg.stream) body.stream_options = { include_usage: true };
  if (cfg.ignoreEos) body.ignore_eos = true;
  if (cfg.returnTokenIds) body.return_token_ids = true;
  if (cfg.logprobs !== undefined) {
    if (cfg.endpoint === '/v1/completions') body.logprobs = cfg.logprobs;
    else Object.assign(body, { logprobs: true, top_logprobs: cfg.logprobs });
  }
  return JSON.stringify(body);
}

/**
 * A keep-alive agent for `sockets` requests in flight: one connection each, opened once and reused
 * across the run. maxSockets caps what a level may hold open and maxFreeSockets must match it: Node's
 * default keeps 256 idle sockets, so at 512 streams half the connections would close after each
 * request and the next ones would pay a TCP handshake inside their TTFT.
 */
export function keepAliveAgent(baseUrl: string, sockets: number): http.Agent {
  const n = Number.isFinite(sockets) ? Math.max(1, sockets) : Infinity;
  const opts: http.AgentOptions = { keepAlive: true, maxSockets: n, maxFreeSockets: Number.isFinite(n) ? n : 1024, scheduling: 'lifo' };
  return baseUrl.startsWith('https:') ? new https.Agent(opts) : new http.Agent(opts);
}

export function sendRequest(p: BenchPrompt, cfg: RequestConfig, agent: http.Agent): Promise<RequestResult> {
  const body = requestBody(p, cfg);
  const url = new URL(cfg.endpoint, cfg.baseUrl + '/');
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  if (cfg.apiKey) headers.authorization = `Bearer ${cfg.apiKey}`;
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise<RequestResult>((resolve) => {
    let sentAt = 0;
    let firstAt = NaN;
    let lastAt = NaN;
    let chunks = 0; // token-bearing chunks
    let idsSeen = -1; // token ids the chunks named (-1: none named any)
    let usage: Chunk['usage'] = null;
    let finished = false; // a finish_reason or [DONE] was seen
    let streamError: string | undefined;
    const itlMs: number[] = [];
    let settled = false;
    const done = (r: Partial<RequestResult> & Pick<RequestResult, 'ok' | 'status'>) => {
      if (settled) return; // a response error can follow its end, a socket error its response
      settled = true;
      const e2eMs = performance.now() - sentAt;
      const reported = typeof usage?.completion_tokens === 'number';
      resolve({
        promptTokens: typeof usage?.prompt_tokens === 'number' ? usage.prompt_tokens : null,
        outputTokens: reported ? usage!.completion_tokens! : idsSeen >= 0 ? idsSeen : chunks,
        usageReported: reported,
        ttftMs: Number.isNaN(firstAt) ? null : firstAt - sentAt,
        itlMs,
        e2eMs,
        ...r,
      });
    };
    const req = lib.request(url, { method: 'POST', agent, headers, timeout: cfg.timeoutMs }, (res) => {
      res.setEncoding('utf8');
      let buf = '';
      if (res.statusCode !== 200) {
        res.on('data', (d: string) => (buf.length < 4096 ? (buf += d) : undefined));
        res.on('end', () => done({ ok: false, status: String(res.statusCode), error: buf.slice(0, 300) }));
        res.on('error', (e) => done({ ok: false, status: String(res.statusCode), error: e.message }));
        return;
      }
      if (!cfg.stream) {
        res.on('data', (d: string) => (buf += d));
        res.on('end', () => {
          const at = performance.now();
          try {
            const j = JSON.parse(buf) as Chunk;
            usage = j.usage ?? null;
            if (j.choices?.length) chunks = 1;
            for (const c of j.choices ?? []) if (Array.isArray(c.token_ids)) idsSeen = Math.max(0, idsSeen) + c.token_ids.length;
            // Whole responses: the first token arrives with the last, so TTFT is the latency.
            done(j.choices ? { ok: true, status: '200', ttftMs: at - sentAt, e2eMs: at - sentAt } : { ok: false, status: 'bad-response', error: buf.slice(0, 300) });
          } catch {
            done({ ok: false, status: 'bad-response', error: buf.slice(0, 300) });
          }
        });
        res.on('error', (e) => done({ ok: false, status: 'stream-error', error: e.message }));
        return;
      }
      // SSE, read line by line (a `data:` line holds one JSON chunk; \r\n line ends work too).
      res.on('data', (d: string) => {
        const at = performance.now();
        buf += d;
        let gotToken = false;
        // A cursor over the buffer, cut once at the end: slicing the rest off after every line
        // would copy the buffer once per chunk, quadratic in the chunks one arrival holds.
        let from = 0;
        for (let nl = buf.indexOf('\n'); nl >= 0; from = nl + 1, nl = buf.indexOf('\n', from)) {
          if (!buf.startsWith('data:', from)) continue;
          const payload = buf.slice(from + 5, nl).trim();
          if (payload === '[DONE]') {
            finished = true;
            continue;
          }
          let j: Chunk;
          try {
            j = JSON.parse(payload) as Chunk;
          } catch {
            streamError = `unparsable chunk: ${payload.slice(0, 100)}`;
            continue;
          }
          if (j.error) streamError = j.error.message ?? 'error event';
          if (j.usage) usage = j.usage;
          let token = false;
          for (const c of j.choices ?? []) {
            if (c.finish_reason) finished = true;
            if (carriesToken(c)) token = true;
            if (Array.isArray(c.token_ids)) idsSeen = Math.max(0, idsSeen) + c.token_ids.length;
          }
          if (token) {
            chunks++;
            gotToken = true;
          }
        }
        buf = from > 0 ? buf.slice(from) : buf;
        // One arrival of bytes is one token event for the timings, however many chunks it held.
        if (gotToken) {
          if (Number.isNaN(firstAt)) firstAt = at;
          else itlMs.push(at - lastAt);
          lastAt = at;
        }
      });
      res.on('end', () => {
        if (streamError) done({ ok: false, status: 'stream-error', error: streamError });
        else if (!finished) done({ ok: false, status: 'incomplete-stream', error: 'the stream ended without a finish_reason or [DONE]' });
        else done({ ok: true, status: '200' });
      });
      res.on('error', (e) => done({ ok: false, status: 'stream-error', error: e.message }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${cfg.timeoutMs} ms`), { code: 'timeout' })));
    req.on('error', (e: NodeJS.ErrnoException) => done({ ok: false, status: e.code ?? 'network', error: e.message }));
    sentAt = performance.now();
    req.end(body);
  });
}
