// TTFT at concurrency 1, stage by stage: one streaming /v1/completions request at a time (token-id
// prompts of 32-512 tokens the prefix cache has not seen, greedy, ignore_eos) through `serve`, with
// the server's stage marks (src/protocol/trace.ts), and the same prompts straight into an engine in
// this process (DIRECT=1) after the server has stopped. Two variants: without logprobs, and with
// `logprobs: 1` (the host-sampling path, which the sidecar's warm-up also takes).
//   BIN=bin/ernie-edge.js SERVE_ARGS='--device cuda --dtype bfloat16' DIRECT=1 OUT=x.json node --import tsx bench/ttft-stages.ts
// The client marks two times per request: the first SSE chunk of any kind, and the first chunk
// carrying a token (its token_ids: requests ask for return_token_ids, which on token-id prompts costs
// the server nothing per token); the server's marks say where the rest went.
// Warm-up vs steady state: `byIndex` splits each variant's requests by their index in the run (the first
// FIRST, the last LAST), so a cost that only cold code pays shows up as a difference between the two.
// Knobs: N (requests per variant), MAX_TOKENS, PROMPT_LEN ('32-512'), VARIANTS ('plain,logprobs1'),
// SERVE_NODE_ARGS (node flags for the served process, e.g. '--no-opt', a diagnostic), FIRST / LAST.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { hrtimeMs } from '../src/cli/trace-file.js';
import { Finish, type StepOutput } from '../src/sidecar/engine/native-engine.js';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { openBenchEngine } from './engine/batching.js';
import { breakdown, readMarks, type Marks } from './serve/breakdown.js';
import { median, quantile } from './serve/stats.js';
import { listeningUrl, untilReady } from './server-url.js';

const N = Number(process.env.N ?? 16);
const MAX_TOKENS = Number(process.env.MAX_TOKENS ?? 64);
const bin = process.env.BIN ?? path.resolve('bin/ernie-edge.js');
const serveArgs = (process.env.SERVE_ARGS ?? '').split(' ').filter(Boolean);
const nodeArgs = (process.env.SERVE_NODE_ARGS ?? '').split(' ').filter(Boolean);
const [PROMPT_MIN, PROMPT_MAX] = (process.env.PROMPT_LEN ?? '32-512').split('-').map(Number) as [number, number];
const FIRST = Number(process.env.FIRST ?? 10);
const LAST = Number(process.env.LAST ?? 100);
const wanted = (process.env.VARIANTS ?? 'plain,logprobs1').split(',');
const VARIANTS = ([
  { name: 'plain', logprobs: null, seed: 11 },
  { name: 'logprobs1', logprobs: 1, seed: 23 },
] as const).filter((v) => wanted.includes(v.name));

function prompts(seed: number): number[][] {
  let s = seed;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  return Array.from({ length: N }, () => Array.from({ length: PROMPT_MIN + Math.floor(rnd() * (PROMPT_MAX - PROMPT_MIN + 1)) }, () => 1000 + Math.floor(rnd() * 99_000)));
}

interface Timing { id: string; sentAt: number; chunkAt: number; firstAt: number; doneAt: number; tokens: number }

function streamOne(base: string, body: object): Promise<Timing> {
  const json = JSON.stringify({ ...body, stream: true });
  return new Promise((resolve, reject) => {
    const t: Timing = { id: '', sentAt: NaN, chunkAt: NaN, firstAt: NaN, doneAt: NaN, tokens: 0 };
    let buf = '';
    const req = http.request(new URL('/v1/completions', base), { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        const at = hrtimeMs();
        buf += d;
        for (let i; (i = buf.indexOf('\n\n')) >= 0; ) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (!frame.startsWith('data: {')) continue;
          const j = JSON.parse(frame.slice(6)) as { id: string; choices: { text: string; logprobs: { tokens: unknown[] } | null; token_ids?: number[] }[] };
          t.id = j.id;
          if (!j.choices.length) continue;
          if (Number.isNaN(t.chunkAt)) t.chunkAt = at;
          const c = j.choices[0]!;
          if (Number.isNaN(t.firstAt) && (c.text || c.logprobs?.tokens.length || c.token_ids?.length)) t.firstAt = at;
        }
      });
      res.on('end', () => (res.statusCode === 200 ? resolve({ ...t, doneAt: hrtimeMs() }) : reject(new Error(`HTTP ${res.statusCode}: ${buf}`))));
    });
    req.on('error', reject);
    t.sentAt = hrtimeMs();
    req.end(json);
  });
}

/** Over the requests that have the figure (a request whose tokens all decode to no text has no token chunk). */
const stat = (all: number[]) => {
  const xs = all.filter((x) => !Number.isNaN(x));
  return { p50: median(xs), p90: quantile(xs, 0.9), min: Math.min(...xs), max: Math.max(...xs), n: xs.length };
};

async function throughServer(traceFile: string) {
  const child = spawn(process.execPath, [...nodeArgs, bin, 'serve', '--port', '0', ...serveArgs], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ERNIE_EDGE_TRACE_FILE: traceFile } });
  const exited = new Promise((r) => child.once('exit', r));
  const base = await listeningUrl(child);
  await untilReady(base, 20);
  const runs: Record<string, Timing[]> = {};
  for (const v of VARIANTS) {
    runs[v.name] = [];
    for (const prompt of prompts(v.seed)) {
      runs[v.name]!.push(await streamOne(base, { prompt, max_tokens: MAX_TOKENS, temperature: 0, ignore_eos: true, return_token_ids: true, ...(v.logprobs === null ? {} : { logprobs: v.logprobs }) }));
    }
  }
  child.kill('SIGTERM');
  await exited;
  return runs;
}

function summarise(runs: Timing[], marks: Marks) {
  const d = (a: string, b: string) => runs.flatMap((t) => { const m = marks.get(t.id) as Record<string, number> | undefined; return m?.[a] !== undefined && m[b] !== undefined ? [m[b] - m[a]] : []; });
  const b = breakdown(marks, runs.map((t) => ({ id: t.id, sentAt: t.sentAt, firstAt: Number.isNaN(t.firstAt) ? t.chunkAt : t.firstAt })));
  return {
    firstChunkMs: stat(runs.map((t) => t.chunkAt - t.sentAt)),
    firstTokenChunkMs: stat(runs.map((t) => t.firstAt - t.sentAt)),
    engineSubmitToFirstTokenCallbackMs: stat(d('sc.submitted', 'sc.step')),
    firstTokenStepMs: stat(d('eng.step', 'sc.step')),
    firstTokenCallbackToFirstChunkWrittenMs: stat(d('sc.step', 'gw.sse')),
    stagesP50: Object.fromEntries(b.path.map((s) => [s.stage, +s.p50Ms.toFixed(3)])),
    requests: runs.length,
  };
}

/** The serving path's share (client-seen TTFT minus the engine's part) and the stages, for a slice of the run. */
function slice(runs: Timing[], marks: Marks) {
  const b = breakdown(marks, runs.map((t) => ({ id: t.id, sentAt: t.sentAt, firstAt: Number.isNaN(t.firstAt) ? t.chunkAt : t.firstAt })));
  return {
    requests: runs.length,
    firstChunkP50Ms: +median(runs.map((t) => t.chunkAt - t.sentAt)).toFixed(3),
    servingP50Ms: +b.servingMs.toFixed(3),
    engineP50Ms: +b.engineMs.toFixed(3),
    stagesP50: Object.fromEntries(b.path.map((s) => [s.stage, +s.p50Ms.toFixed(3)])),
  };
}

/** The first FIRST and the last LAST requests of a run (the last ones are what a warm server does). */
function byIndex(runs: Timing[], marks: Marks) {
  const first = runs.slice(0, Math.min(FIRST, runs.length));
  const last = runs.slice(Math.max(first.length, runs.length - LAST));
  return { first: slice(first, marks), last: last.length ? slice(last, marks) : null };
}

async function direct(logprobs: number | null, seed: number): Promise<number[]> {
  const { dir } = await ensureFormulaCheckpoint();
  const cuda = serveArgs.includes('cuda');
  const bf16 = serveArgs.join(' ').includes('--dtype bfloat16');
  const { engine, setSink } = await openBenchEngine(dir, cuda ? { device: 'cuda', captureGraphs: true, precise: !bf16, gpuMemoryUtilization: 0.5 } : { kvCacheMemory: 2 ** 30 }, { maxNumSeqs: 256, enablePrefixCaching: true });
  const keep = setInterval(() => {}, 1 << 30);
  const out: number[] = [];
  let id = 1;
  for (const prompt of prompts(seed)) {
    out.push(
      await new Promise<number>((resolve, reject) => {
        const me = id++;
        let first = NaN;
        const sent = hrtimeMs();
        setSink((outs: StepOutput[]) => {
          for (const o of outs) {
            if (o.id !== me) continue;
            if (Number.isNaN(first) && o.tokens.length > 0) first = hrtimeMs() - sent;
            if (o.finish !== Finish.None) resolve(first);
          }
        });
        const err = engine.submit({
          id: me, prompt: Int32Array.from(prompt), maxTokens: MAX_TOKENS, n: 1, temperature: 0, topP: 1, topK: 0, minP: 0,
          repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, seed: null,
          logitBiasIds: new Int32Array(0), logitBiasValues: new Float32Array(0), stopTokenIds: new Int32Array(0), logprobs: logprobs ?? -1,
        });
        if (err) reject(new Error(err));
      }),
    );
  }
  clearInterval(keep);
  await engine.close();
  return out;
}

const traceFile = path.join(os.tmpdir(), `ttft-stages-${process.pid}.jsonl`);
const runs = await throughServer(traceFile);
const marks = await readMarks(traceFile);
await rm(traceFile, { force: true });
const result: Record<string, unknown> = { label: process.env.LABEL ?? '', serveArgs, nodeArgs, requests: N, maxTokens: MAX_TOKENS, promptLen: [PROMPT_MIN, PROMPT_MAX] };
for (const v of VARIANTS) {
  const s = summarise(runs[v.name]!, marks);
  const eng = process.env.DIRECT === '1' ? await direct(v.logprobs, v.seed) : null;
  const idx = byIndex(runs[v.name]!, marks);
  result[v.name] = { ...s, byIndex: idx, ...(eng ? { engineInProcessTtftMs: stat(eng) } : {}) };
  console.log(`[${result.label}] ${v.name}: first chunk p50 ${s.firstChunkMs.p50.toFixed(2)} ms, first token chunk p50 ${s.firstTokenChunkMs.p50.toFixed(2)} ms; engine part ${s.engineSubmitToFirstTokenCallbackMs.p50.toFixed(2)} ms (step ${s.firstTokenStepMs.p50.toFixed(2)}, max ${s.firstTokenStepMs.max.toFixed(1)})${eng ? `; engine in-process p50 ${median(eng).toFixed(2)} ms` : ''}`);
  console.log('  ', JSON.stringify(s.stagesP50));
  for (const [k, w] of Object.entries(idx)) if (w) console.log(`   ${k} ${w.requests}: first chunk p50 ${w.firstChunkP50Ms} ms, serving ${w.servingP50Ms}, engine ${w.engineP50Ms}`, JSON.stringify(w.stagesP50));
}
if (process.env.OUT) await writeFile(process.env.OUT, JSON.stringify(result, null, 2) + '\n');
