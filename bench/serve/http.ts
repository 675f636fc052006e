// bench:serve's HTTP side: the server under test (`ernie-edge serve` as a child process, with stage
// tracing into a file) and streaming /v1/completions clients timed on the host-wide monotonic clock,
// so their marks line up with the server's (src/protocol/trace.ts).
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hrtimeMs } from '../../src/cli/trace-file.js';
import type { RunResult } from '../engine/batching.js';
import type { BenchRequest } from '../engine/workload.js';
import { latency } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface Server {
  base: string;
  /** The server's first process (the gateway; the sidecar is its child). */
  pid: number;
  /** When the server process was spawned and when /ready first answered 200 (host clock, ms). */
  spawnedAt: number;
  readyAt: number;
  stop(): Promise<void>;
}

/**
 * `ernie-edge serve` on any free port: by default on the checkpoint `dir` with bench:serve's options;
 * `flags` replaces those (bench/serve-gpu.ts passes its own). traceFile null: no stage tracing.
 */
export async function startServer(
  dir: string,
  traceFile: string | null,
  flags: string[] = ['--model', dir, '--kv-cache-memory', '4GiB', '--max-num-batched-tokens', '512'],
  extraEnv: NodeJS.ProcessEnv = {}, // e.g. NODE_OPTIONS='--import …' (bench/serve-gpu/cpu-profile.mjs): every process of the server inherits it
  root = path.resolve(here, '../..'), // the checkout whose server runs (bench:serve --against: another one)
): Promise<Server> {
  const bin = path.join(root, 'bin/ernie-edge.js');
  const spawnedAt = hrtimeMs();
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', ...flags], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...extraEnv, ...(traceFile === null ? {} : { ERNIE_EDGE_TRACE_FILE: traceFile }) },
  });
  let buf = '';
  const exited = new Promise((r) => child.once('exit', r));
  // A benchmark that fails (or is interrupted) must not leave its servers running on a shared host.
  const orphan = () => child.kill('SIGTERM');
  process.once('exit', orphan);
  void exited.then(() => process.off('exit', orphan));
  const base = await new Promise<string>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`server exited ${c}`)));
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const m = line.match(/"url":"(http:\/\/[^"]+)"/);
        if (m) resolve(m[1]!);
      }
    });
  });
  let readyAt = NaN;
  for (let i = 0; i < 6000; i++) {
    if ((await fetch(`${base}/ready`).then((r) => r.status, () => 0)) === 200) {
      readyAt = hrtimeMs();
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  if (Number.isNaN(readyAt)) throw new Error('the server never became ready');
  return {
    base, pid: child.pid!, spawnedAt, readyAt,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface StreamTiming {
  /** The response id (the trace id of the request). */
  id: string;
  sentAt: number; // host clock, ms
  firstAt: number; // first token's chunk parsed
  ttftMs: number;
  itlMs: number[];
  outputTokens: number;
}

/** An OpenAI streaming request: the route and its JSON body (`stream: true` is added). */
export interface StreamCall {
  route: '/v1/completions' | '/v1/chat/completions';
  body: Record<string, unknown>;
}

/**
 * The random workload's request: token ids to /v1/completions, greedy, ignore_eos, logprobs: 1.
 * NOTE: logprobs makes every token a frame: the formula weights emit ids mostly beyond the test
 * tokenizer's 3,000 pieces, which decode to empty text and (correctly) produce no frame; timing text
 * frames alone measured that, not the serving layers.
 */
export const completionCall = (r: BenchRequest): StreamCall => ({
  route: '/v1/completions',
  body: { prompt: Array.from(r.prompt), max_tokens: r.maxTokens, temperature: 0, ignore_eos: true, logprobs: 1, stream_options: { include_usage: true } },
});

interface Choice {
  text?: string;
  delta?: { content?: string };
  logprobs?: { tokens?: unknown[]; content?: unknown[] } | null;
}
/** Whether a chunk's choice carries a token (chat's first chunk only announces the role). */
const hasToken = (c: Choice) => !!(c.text || c.delta?.content || c.logprobs?.tokens?.length || c.logprobs?.content?.length);

// NOTE: a lean node:http client with a keep-alive agent, not fetch: the client shares this machine's
// two cores with the server and the engine, and undici's fetch + web streams spend ~6 ms of CPU per
// streamed request (measured), which the engine's threads then lose. A client elsewhere costs the
// server nothing; the leaner the client here, the closer the measurement is to that.
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/**
 * One streamed request. Timed at the client's boundary, not including its own JS: from writing the
 * request to the arrival of the bytes that carry the first token (the engine side is timed the same
 * way: from submit() to the step callback).
 */
export function streamOne(base: string, call: StreamCall): Promise<StreamTiming> {
  const body = JSON.stringify({ ...call.body, stream: true });
  const url = new URL(call.route, base);
  return new Promise<StreamTiming>((resolve, reject) => {
    let buf = '';
    let id = '';
    let firstAt = NaN;
    let last = NaN;
    let outputTokens = 0;
    const itlMs: number[] = [];
    let sentAt = NaN;
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        res.on('data', (d: string) => (buf += d));
        res.on('end', () => reject(new Error(`HTTP ${res.statusCode}: ${buf}`)));
        return;
      }
      res.on('data', (d: string) => {
        const arrived = hrtimeMs();
        buf += d;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue;
          const j = JSON.parse(frame.slice(6)) as { id: string; usage?: { completion_tokens: number }; choices?: Choice[] };
          id = j.id;
          if (j.usage) outputTokens += j.usage.completion_tokens;
          if (!j.choices?.some(hasToken)) continue;
          if (Number.isNaN(firstAt)) firstAt = arrived;
          else itlMs.push(arrived - last);
          last = arrived;
        }
      });
      res.on('end', () => resolve({ id, sentAt, firstAt, ttftMs: firstAt - sentAt, itlMs, outputTokens }));
      res.on('error', reject);
    });
    req.on('error', reject);
    sentAt = hrtimeMs();
    req.end(body);
  });
}

/** A closed-loop client: `concurrency` streams in flight until every request is done. */
export async function httpRun(base: string, reqs: BenchRequest[], concurrency: number): Promise<RunResult> {
  const ttft: number[] = [];
  const itl: number[] = [];
  let out = 0;
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < reqs.length) {
      const t = await streamOne(base, completionCall(reqs[next++]!));
      ttft.push(t.ttftMs);
      itl.push(...t.itlMs);
      out += t.outputTokens;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return { label: `HTTP c=${concurrency}`, requests: reqs.length, outputTokens: out, seconds, outputTokS: out / seconds, ttftMs: latency(ttft), itlMs: latency(itl) };
}
