// `ernie-edge bench serve`: load-tests any OpenAI-compatible server in the manner of `vllm bench
// serve`. Per --max-concurrency level: fresh prompts from the seed, Poisson (or gamma) arrivals, the
// requests spread over the main thread or worker threads, then vLLM's figures plus the client's own
// CPU use. Exit code: 0 when requests completed, 1 when none did (or the server could not be asked
// for its model), 2 on a usage error. Never calls process.exit.

import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from '../args.js';
import { BENCH_SERVE_HELP, parseBenchServeArgs, type BenchServeOptions } from './args.js';
import { buildDataset, randomPrompts, type BenchPrompt } from './dataset.js';
import { autoWorkers, inlineExecutor, workerExecutor, type Executor } from './executor.js';
import { levelMetrics, type LevelMetrics } from './metrics.js';
import { levelProgress } from './progress.js';
import { chartSvg, levelText, sweepText, type BenchResult } from './report.js';
import { type RequestConfig } from './request.js';
import { arrivalOffsetsMs, subSeed } from './rng.js';
import { runLevel } from './run-level.js';

/** Where the report goes (stdout) and the progress bar and errors (stderr, drawn only when a TTY). */
export interface BenchIo {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream & { isTTY?: boolean };
}

/** The first model the server lists (GET /v1/models). */
export async function firstModel(baseUrl: string, apiKey?: string): Promise<string> {
  const url = `${baseUrl}/v1/models`;
  const res = await fetch(url, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(30_000) }).catch((e: Error) => {
    const cause = (e.cause as NodeJS.ErrnoException | undefined)?.code ?? e.message;
    throw new Error(`cannot reach ${url} (${cause}) to find the model: is the server up? (or pass --model)`);
  });
  if (res.status !== 200) throw new Error(`GET ${baseUrl}/v1/models answered ${res.status}: pass --model`);
  const j = (await res.json()) as { data?: { id?: string }[] };
  const id = j.data?.[0]?.id;
  if (!id) throw new Error(`GET ${baseUrl}/v1/models lists no model: pass --model`);
  return id;
}

function warmupPrompts(opts: BenchServeOptions, levels: BenchPrompt[][]): BenchPrompt[] {
  // Fresh random prompts (from their own seed stream) so no measured prompt is in a prefix cache;
  // the other datasets repeat their prompts anyway. Short outputs: the warm-up checks, it does not load.
  const base = opts.dataset === 'random' ? randomPrompts(opts.numWarmups, { ...opts, seed: subSeed(opts.seed, 7) }, opts.endpoint) : Array.from({ length: opts.numWarmups }, (_, i) => levels[0]![i % levels[0]!.length]!);
  return base.map((p) => ({ ...p, outputTokens: Math.min(p.outputTokens, 16) }));
}

const stamp = (d: Date) => d.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);

export async function runBenchServe(argv: readonly string[], env: NodeJS.ProcessEnv, io: BenchIo = { out: process.stdout, err: process.stderr }): Promise<number> {
  let opts: BenchServeOptions;
  try {
    const parsed = parseBenchServeArgs(argv, env);
    if (parsed === 'help') {
      io.out.write(`${BENCH_SERVE_HELP}\n`);
      return 0;
    }
    opts = parsed;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err.write(`ernie-edge bench serve: ${e.message}\n`);
    return 2;
  }
  const say = (s: string) => io.out.write(`${s}\n`);
  let model: string;
  let levels: BenchPrompt[][];
  try {
    model = opts.model ?? (await firstModel(opts.baseUrl, opts.apiKey));
    levels = await buildDataset(opts);
  } catch (e) {
    io.err.write(`ernie-edge bench serve: ${(e as Error).message}\n`);
    return 1;
  }
  const cfg: RequestConfig = {
    baseUrl: opts.baseUrl, endpoint: opts.endpoint, model, stream: opts.stream, ignoreEos: opts.ignoreEos,
    temperature: opts.temperature, logprobs: opts.logprobs, returnTokenIds: opts.returnTokenIds, apiKey: opts.apiKey, timeoutMs: opts.timeoutMs,
  };
  const date = new Date();
  say(`bench serve: ${model} at ${opts.baseUrl}${opts.endpoint}, ${opts.dataset} dataset, ${opts.stream ? 'streaming' : 'not streaming'}, request rate ${opts.requestRate}, levels ${opts.maxConcurrency.map((c) => c ?? '∞').join(',')}`);

  if (opts.numWarmups > 0) {
    const ex = inlineExecutor(cfg, 1);
    for (const p of warmupPrompts(opts, levels)) {
      const r = await ex.send(p);
      if (!r.ok) say(`warm-up request failed (${r.status}): ${r.error ?? ''}`);
    }
    await ex.close();
  }

  const results: LevelMetrics[] = [];
  for (let k = 0; k < levels.length; k++) {
    const prompts = levels[k]!;
    const c = opts.maxConcurrency[k]!;
    const inFlight = c ?? prompts.length;
    const threads = opts.numWorkers ?? autoWorkers(inFlight);
    const ex: Executor = threads > 1 ? await workerExecutor(cfg, inFlight, threads) : inlineExecutor(cfg, inFlight);
    const bar = levelProgress(`c=${c ?? '∞'}`, prompts.length, io.err, !opts.disableProgress);
    let run;
    try {
      run = await runLevel(prompts, arrivalOffsetsMs(prompts.length, opts.requestRate, opts.burstiness, subSeed(opts.seed, 100 + k)), c, ex, (r) => bar.done(r.ok, r.outputTokens));
    } finally {
      bar.end();
      await ex.close();
    }
    const m = levelMetrics(run, opts.goodput, c, opts.requestRate);
    if (opts.saveDetailed) m.requests = run.results;
    results.push(m);
    say(levelText(m));
  }
  if (results.length > 1) say(sweepText(results));

  const result: BenchResult = {
    date: date.toISOString(),
    command: ['ernie-edge', 'bench', 'serve', ...argv].join(' '),
    baseUrl: opts.baseUrl,
    endpoint: opts.endpoint,
    model,
    dataset: {
      name: opts.dataset,
      ...(opts.dataset === 'random' ? { inputLen: opts.inputLen, outputLen: opts.outputLen, vocabSize: opts.vocabSize } : {}),
      ...(opts.dataset === 'sharegpt' ? { path: opts.datasetPath, outputLen: opts.sharegptOutputLen ?? 'reference reply' } : {}),
      ...(opts.dataset === 'article' ? { outputLen: opts.articleOutputLen } : {}),
    },
    stream: opts.stream,
    ignoreEos: opts.ignoreEos,
    temperature: opts.temperature,
    logprobs: opts.logprobs ?? null,
    returnTokenIds: opts.returnTokenIds,
    seed: opts.seed,
    requestRate: Number.isFinite(opts.requestRate) ? opts.requestRate : null,
    burstiness: opts.burstiness,
    goodput: opts.goodput,
    numWarmups: opts.numWarmups,
    client: { node: process.version, cores: os.availableParallelism() },
    levels: results,
  };
  if (opts.saveResult) {
    const name = opts.resultFilename ?? `bench-serve-${model.replace(/[^A-Za-z0-9._-]+/g, '_')}-${stamp(date)}.json`;
    const file = path.resolve(opts.resultDir, name);
    const svg = file.replace(/\.json$/i, '') + '.svg';
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify(result, null, 2) + '\n');
    await writeFile(svg, chartSvg(result));
    say(`wrote ${file} and ${svg}`);
  }
  return results.some((m) => m.completed > 0) ? 0 : 1;
}
