// The serving-path benchmark's client: C streaming /v1/completions at once over plain node:http
// (keep-alive agent, no SDK: the client must cost little next to the server), token-id prompts,
// ignore_eos, include_usage. Only the last chunk of a stream is parsed (its usage); the others are
// counted and timed, so the client spends little CPU per token.
import http from 'node:http';

export interface LoadResult {
  streams: number;
  completionTokens: number; // sum of the streams' usage.completion_tokens
  wallS: number; // first request sent → last stream ended
  deliveredTokS: number;
  ttftMsP50: number;
  /** Per stream, the longest time between two chunks; p50 and max over the streams. */
  maxGapMsP50: number;
  maxGapMsMax: number;
  errors: number;
}

interface One {
  ttftMs: number;
  maxGapMs: number;
  tokens: number;
  ok: boolean;
}

function streamOnce(agent: http.Agent, base: URL, body: string): Promise<One> {
  return new Promise((resolve) => {
    const sent = performance.now();
    let first = 0;
    let last = 0;
    let maxGap = 0;
    let tail = '';
    const req = http.request(
      { host: base.hostname, port: base.port, path: '/v1/completions', method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          const now = performance.now();
          if (first === 0) first = now;
          else maxGap = Math.max(maxGap, now - last);
          last = now;
          tail = (tail + d).slice(-4096);
        });
        res.on('end', () => {
          const m = /"completion_tokens":(\d+)/.exec(tail);
          resolve({ ttftMs: first - sent, maxGapMs: maxGap, tokens: m ? Number(m[1]) : 0, ok: res.statusCode === 200 && m !== null });
        });
        res.on('error', () => resolve({ ttftMs: 0, maxGapMs: 0, tokens: 0, ok: false }));
      },
    );
    req.on('error', () => resolve({ ttftMs: 0, maxGapMs: 0, tokens: 0, ok: false }));
    req.end(body);
  });
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

export async function runLoad(baseUrl: string, streams: number, maxTokens: number, seed: number): Promise<LoadResult> {
  const base = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const bodies = Array.from({ length: streams }, (_, i) =>
    JSON.stringify({
      prompt: Array.from({ length: 16 }, (_, k) => 1 + ((seed * 7919 + i * 131 + k * 17) % 900)),
      max_tokens: maxTokens,
      stream: true,
      stream_options: { include_usage: true },
      ignore_eos: true,
      temperature: 0,
    }),
  );
  const t0 = performance.now();
  const results = await Promise.all(bodies.map((b) => streamOnce(agent, base, b)));
  const wallS = (performance.now() - t0) / 1000;
  agent.destroy();
  const ok = results.filter((r) => r.ok);
  const completionTokens = ok.reduce((s, r) => s + r.tokens, 0);
  return {
    streams,
    completionTokens,
    wallS,
    deliveredTokS: completionTokens / wallS,
    ttftMsP50: pct(ok.map((r) => r.ttftMs), 0.5),
    maxGapMsP50: pct(ok.map((r) => r.maxGapMs), 0.5),
    maxGapMsMax: pct(ok.map((r) => r.maxGapMs), 1),
    errors: results.length - ok.length,
  };
}
