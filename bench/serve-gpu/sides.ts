// The two sides bench/serve-gpu.ts compares, on the same requests: the engine driven in this process
// (bench/engine/batching.ts engineRun: closed loop at each concurrency) and `ernie-edge bench serve`
// run as its own process against `ernie-edge serve` (closed loop through --max-concurrency).
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseBenchServeArgs, type BenchServeOptions } from '../../src/cli/bench-serve/args.js';
import { buildDataset } from '../../src/cli/bench-serve/dataset.js';
import type { LevelMetrics } from '../../src/cli/bench-serve/metrics.js';
import type { BenchResult } from '../../src/cli/bench-serve/report.js';
import type { LoadOptions } from '../../src/sidecar/model/load.js';
import { engineRun, openBenchEngine } from '../engine/batching.js';
import { randomWorkload, type BenchRequest } from '../engine/workload.js';
import { workloadFlags, type ServeGpuOptions } from './options.js';

const bin = fileURLToPath(new URL('../../bin/ernie-edge.js', import.meta.url));

export interface SideFigures {
  outputTokS: number;
  requests: number;
  outputTokens: number;
  ttftP50Ms: number | null;
  ttftP99Ms: number | null;
  itlP50Ms: number | null;
  itlP99Ms: number | null;
}

/** The requests `bench serve` will send, level by level, as engine requests. */
export async function sharedWorkload(o: ServeGpuOptions): Promise<BenchRequest[][]> {
  const levels = await buildDataset(parseBenchServeArgs(workloadFlags(o)) as BenchServeOptions);
  return levels.map((ps) => ps.map((p) => ({ prompt: Int32Array.from(p.prompt as number[]), maxTokens: p.outputTokens })));
}

export const serverFlags = (o: ServeGpuOptions, precision: string): string[] => [
  '--device', o.device, '--dtype', precision, '--kv-cache-dtype', precision,
  '--max-num-seqs', String(Math.max(...o.levels)), '--max-num-batched-tokens', String(o.maxNumBatchedTokens),
  '--max-model-len', String(o.maxModelLen), '--no-enable-prefix-caching',
  ...(o.device === 'cuda' ? ['--gpu-memory-utilization', '0.5'] : ['--kv-cache-memory', '2GiB']),
];

/**
 * The engine in-process with the options the server gets (serverFlags): same precision, sequences,
 * token budget, context, no prefix caching; on CUDA every graph captured before the first step.
 */
export async function engineSide(dir: string, o: ServeGpuOptions, precision: 'bfloat16' | 'float32', work: BenchRequest[][]): Promise<SideFigures[]> {
  const maxNumSeqs = Math.max(...o.levels);
  const load: LoadOptions = {
    device: o.device, precise: precision === 'float32', kvCacheDtype: precision, maxModelLen: o.maxModelLen, maxNumBatchedTokens: o.maxNumBatchedTokens,
    ...(o.device === 'cuda' ? { gpuMemoryUtilization: 0.5, captureGraphs: true } : { kvCacheMemory: 2 * 2 ** 30 }),
  };
  const e = await openBenchEngine(dir, load, { maxNumSeqs, maxNumBatchedTokens: o.maxNumBatchedTokens, maxModelLen: o.maxModelLen, enablePrefixCaching: false });
  try {
    // Warm-up as the server's own (its sidecar warms up before /ready): not measured.
    const warm = randomWorkload(Math.min(16, maxNumSeqs), 7).map((r) => ({ ...r, maxTokens: Math.min(r.maxTokens, 16) }));
    await engineRun(e.engine, e.setSink, warm, warm.length, 'warm-up', e.kvBlockBytes, e.nextIds(warm.length));
    const out: SideFigures[] = [];
    for (let k = 0; k < o.levels.length; k++) {
      const reqs = work[k]!;
      // No logprobs, as the HTTP side: greedy sampled on the device.
      const r = await engineRun(e.engine, e.setSink, reqs, o.levels[k]!, `engine c=${o.levels[k]}`, e.kvBlockBytes, e.nextIds(reqs.length));
      out.push({ outputTokS: r.outputTokS, requests: r.requests, outputTokens: r.outputTokens, ttftP50Ms: r.ttftMs.p50, ttftP99Ms: r.ttftMs.p99, itlP50Ms: r.itlMs.p50, itlP99Ms: r.itlMs.p99 });
    }
    return out;
  } finally {
    await e.engine.close();
  }
}

export const httpFigures = (m: LevelMetrics): SideFigures & { clientCpuCores: number; clientCpuUsPerToken: number | null; clientThreads: number; clientSaturated: boolean; failed: number } => ({
  outputTokS: m.outputThroughput,
  requests: m.completed,
  outputTokens: m.totalOutputTokens,
  ttftP50Ms: m.ttftMs?.p50 ?? null,
  ttftP99Ms: m.ttftMs?.p99 ?? null,
  itlP50Ms: m.itlMs?.p50 ?? null,
  itlP99Ms: m.itlMs?.p99 ?? null,
  failed: m.failed,
  clientCpuCores: m.client.cpuCores,
  clientCpuUsPerToken: m.client.cpuUsPerOutputToken,
  clientThreads: m.client.threads,
  clientSaturated: m.client.saturated,
});

/** `ernie-edge bench serve` as a child process (its own cores, as a user runs it); its log goes to `log`. */
/** `bench serve`'s warm-ups per run: enough for the client process's own request and SSE code to compile. */
const CLIENT_WARMUPS = 16;

export async function benchServeSide(base: string, o: ServeGpuOptions, name: string, stream: boolean, log: string, only?: { level: number; prompts: number }): Promise<BenchResult> {
  const args = ['bench', 'serve', '--base-url', base, ...workloadFlags(o, only), '--num-warmups', String(CLIENT_WARMUPS), '--save-result', '--result-dir', o.outDir, '--result-filename', `${name}.json`, ...(stream ? [] : ['--no-stream'])];
  const file = createWriteStream(log);
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(file);
    child.stderr.on('data', (d: Buffer) => file.write(d));
    child.once('error', reject);
    child.once('exit', resolve);
  });
  await new Promise<void>((resolve) => file.end(resolve));
  if (code !== 0) throw new Error(`bench serve exited ${code}; see ${log}`);
  return JSON.parse(await readFile(path.join(o.outDir, `${name}.json`), 'utf8')) as BenchResult;
}
