// `npm run bench:serve`: the same workload through the whole stack (HTTP + SSE -> gateway -> Unix
// socket -> sidecar -> engine) and straight into the engine in this process, one after the other,
// so the cost of the serving layers shows as a ratio. 0.3B shape, formula weights, 64 streams.
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StepOutput } from '../src/sidecar/engine/native-engine.js';
import { readCheckpoint } from '../src/sidecar/model/checkpoint.js';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { nativeLoadOptions } from '../src/sidecar/model/load.js';
import { native } from '../src/sidecar/native.js';
import { engineRun, type RunResult } from './engine/batching.js';
import { randomWorkload, type BenchRequest } from './engine/workload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 64);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** A closed-loop HTTP client: `concurrency` streaming /v1/completions requests in flight. */
async function httpRun(base: string, reqs: BenchRequest[], concurrency: number): Promise<RunResult> {
  const ttft: number[] = [];
  const itl: number[] = [];
  let out = 0;
  let next = 0;
  const t0 = performance.now();
  const one = async (r: BenchRequest) => {
    const start = performance.now();
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // logprobs: 1 makes every token a frame. NOTE: the formula weights emit ids mostly beyond the
      // test tokenizer's 3,000 pieces, which decode to empty text and (correctly) produce no frame;
      // timing text frames alone measured that, not the serving layers.
      body: JSON.stringify({ prompt: Array.from(r.prompt), max_tokens: r.maxTokens, temperature: 0, ignore_eos: true, logprobs: 1, stream: true, stream_options: { include_usage: true } }),
    });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let last = -1;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue;
        const j = JSON.parse(frame.slice(6));
        if (j.usage) out += j.usage.completion_tokens;
        if (!j.choices?.length) continue;
        const now = performance.now();
        if (last < 0) ttft.push(now - start);
        else itl.push(now - last);
        last = now;
      }
    }
  };
  const worker = async () => {
    while (next < reqs.length) await one(reqs[next++]!);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return {
    label: `HTTP c=${concurrency}`, requests: reqs.length, outputTokens: out, seconds, outputTokS: out / seconds,
    ttftMs: { p50: pct(ttft, 50), p99: pct(ttft, 99) }, itlMs: { p50: pct(itl, 50), p99: pct(itl, 99) },
  };
}

async function startServer(dir: string): Promise<{ base: string; stop: () => Promise<void> }> {
  const bin = path.resolve(here, '../bin/ernie-edge.js');
  const child = spawn(process.execPath, [bin, 'serve', '--model', dir, '--port', '0', '--kv-cache-memory', '4GiB', '--max-num-batched-tokens', '512'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buf = '';
  const base = await new Promise<string>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`server exited ${c}`)));
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = buf.match(/"url":"(http:\/\/[^"]+)"/);
      if (m) resolve(m[1]!);
    });
  });
  for (let i = 0; i < 600; i++) {
    if ((await fetch(`${base}/ready`).then((r) => r.status, () => 0)) === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function main(): Promise<void> {
  const { dir } = await ensureFormulaCheckpoint();
  // The server needs a tokenizer beside the weights; token-id prompts make it irrelevant to the load.
  const tok = path.resolve(here, '../test/fixtures/golden/tokenizer/hf');
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await writeFile(path.join(dir, f), await readFile(path.join(tok, f)));
  const work = randomWorkload(REQUESTS, 2);

  const ck = await readCheckpoint(dir);
  const lo = nativeLoadOptions(ck, { kvCacheMemory: 4 * 2 ** 30 });
  let sink: (o: StepOutput[]) => void = () => {};
  const engine = await native().createEngine(lo, { maxNumSeqs: 256, maxNumBatchedTokens: 512, maxModelLen: 4096 }, (o) => sink(o));
  const direct = await engineRun(engine, (f) => (sink = f), work, CONCURRENCY, `engine c=${CONCURRENCY}`, lo.kvBlockBytes, 1, 1);
  // The fixed per-request cost of the serving layers, on an otherwise idle machine: one request at
  // a time, a 64-token prompt, 8 new tokens.
  const single = randomWorkload(12, 3).map((r) => ({ prompt: r.prompt.slice(0, 64), maxTokens: 8 }));
  const directOne = await engineRun(engine, (f) => (sink = f), single, 1, 'engine c=1', lo.kvBlockBytes, 10_000, 1);
  await engine.close();

  const server = await startServer(dir);
  const http = await httpRun(server.base, work, CONCURRENCY);
  const httpOne = await httpRun(server.base, single, 1);
  await server.stop();

  const row = (r: RunResult) =>
    `  ${r.label.padEnd(16)} ${r.outputTokS.toFixed(1).padStart(7)} tok/s  TTFT p50/p99 ${r.ttftMs.p50.toFixed(0)}/${r.ttftMs.p99.toFixed(0)} ms  ITL p50/p99 ${r.itlMs.p50.toFixed(1)}/${r.itlMs.p99.toFixed(1)} ms`;
  console.log(`\n${REQUESTS} requests (prompts 32-512, 64-256 new tokens), ${CONCURRENCY} streams`);
  console.log(row(direct));
  console.log(row(http));
  console.log(`one request at a time (64-token prompt, 8 new tokens, 12 requests)`);
  console.log(row(directOne));
  console.log(row(httpOne));
  const overhead = {
    throughput: 1 - http.outputTokS / direct.outputTokS,
    ttftP50Ms: http.ttftMs.p50 - direct.ttftMs.p50,
    ttftP50MsUnloaded: httpOne.ttftMs.p50 - directOne.ttftMs.p50,
  };
  console.log(`  serving layers cost ${(100 * overhead.throughput).toFixed(1)}% of throughput at ${CONCURRENCY} streams (target <= 5%),`);
  console.log(`  ${overhead.ttftP50MsUnloaded.toFixed(1)} ms of TTFT p50 per request unloaded and ${overhead.ttftP50Ms.toFixed(0)} ms at ${CONCURRENCY} streams (target <= 5 ms)`);
  await mkdir(path.join(here, 'results'), { recursive: true });
  await writeFile(path.join(here, 'results', 'serve.json'), JSON.stringify({ date: new Date().toISOString(), concurrency: CONCURRENCY, requests: REQUESTS, engine: direct, http, engineSingle: directOne, httpSingle: httpOne, overhead, targets: { throughput: 0.05, ttftP50Ms: 5 } }, null, 2) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
