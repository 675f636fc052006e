// `npm run bench:serve-path`: the serving path alone (HTTP + SSE → gateway → Unix socket → sidecar →
// detokenizer → step callback) at GPU-like token rates, on a CPU, without a GPU: `ernie-edge serve`
// over the fake native engine (test/doubles/fake-native-engine.ts) stepping every STEP_MS on the wall
// clock (pace 'fixed': its production does not wait for the consumer, like a GPU engine on its own
// thread). At 256 and 512 streams it compares what clients receive (completion tokens ÷ wall time,
// first request sent → last stream ended) with the same fake engine driven directly in this process
// (same requests, same pace, no serving path: `engineTokS`) and with the nominal rate (streams × 1000 /
// STEP_MS tokens/s). It also counts the MaxListenersExceededWarnings each server printed. With `--base DIR` (a checkout of the code before a change,
// node_modules linked) the same levels run against that code first, in the same run.
// Results: bench/results/serve-path-fake.json. `--profile DIR` writes CPU profiles (.cpuprofile, as node --cpu-prof)
// of the gateway and the sidecar there (the profiling run of bench/README.md; its figures are not recorded).
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeNativeEngine } from '../test/doubles/fake-native-engine.js';
import { runLoad, type LoadResult } from './serve-path/load.js';
import { listeningUrl, untilReady } from './server-url.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const STEP_MS = Number(process.env.BENCH_STEP_MS ?? 2);
const MAX_TOKENS = Number(process.env.BENCH_MAX_TOKENS ?? 256);
const LEVELS = (process.env.BENCH_LEVELS ?? '256,512').split(',').map(Number);
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

interface Level extends LoadResult {
  engineTokS: number; // the fake engine driven directly, same requests and pace
  nominalTokS: number;
  deliveredOverEngine: number;
  deliveredOverNominal: number;
}

/** The fake engine alone, in this process: `streams` requests of `MAX_TOKENS`, stepped at STEP_MS. */
async function engineAlone(streams: number): Promise<number> {
  let tokens = 0;
  let left = streams;
  let resolve!: () => void;
  const finished = new Promise<void>((r) => (resolve = r));
  const e = new FakeNativeEngine(
    {
      engine: { maxNumSeqs: 512, maxNumBatchedTokens: 8192, maxModelLen: 8192, enablePrefixCaching: false, seed: 0 },
      vocabSize: 103424,
      corpus: Array.from({ length: 64 }, (_, i) => 100 + i),
      eosId: 2,
      kvBlocks: 100_000,
      stepMs: STEP_MS,
      pace: 'fixed',
    },
    (outs) => {
      for (const o of outs) {
        tokens += o.tokens.length;
        if (o.finish !== 0 && --left === 0) resolve();
      }
    },
  );
  const t0 = performance.now();
  for (let i = 0; i < streams; i++) {
    const refused = e.submit({
      id: i + 1, prompt: Int32Array.from({ length: 16 }, (_, k) => 1 + ((i * 131 + k * 17) % 900)), maxTokens: MAX_TOKENS, n: 1,
      temperature: 0, topP: 1, topK: 0, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, seed: null,
      logitBiasIds: new Int32Array(0), logitBiasValues: new Float32Array(0), stopTokenIds: new Int32Array(0), logprobs: -1,
    });
    if (refused !== null) throw new Error(refused);
  }
  await finished;
  const tokS = tokens / ((performance.now() - t0) / 1000);
  await e.close();
  return tokS;
}

async function startServer(src: string, cache: string, profileDir: string | undefined): Promise<{ base: string; stop: () => Promise<void>; warnings: () => number }> {
  const args = ['serve', '--port', '0', '--max-num-seqs', '512', '--kv-cache-memory', '8GiB'];
  const env: NodeJS.ProcessEnv = { ...process.env, SERVE_PATH_SRC: src, FAKE_ENGINE_STEP_MS: String(STEP_MS), ERNIE_EDGE_CACHE: cache };
  if (profileDir) {
    await mkdir(profileDir, { recursive: true });
    env.SERVE_PATH_PROFILE = profileDir;
  }
  const child = spawn(process.execPath, [path.join(here, 'serve-path/fake-serve.js'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let warnings = 0;
  child.stderr!.on('data', (d: Buffer) => {
    warnings += d.toString().split('MaxListenersExceededWarning').length - 1;
    process.stderr.write(d);
  });
  const exited = new Promise((r) => child.once('exit', r));
  const base = await listeningUrl(child);
  await untilReady(base, 20, 3000);
  return {
    base,
    warnings: () => warnings,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function runVariant(label: string, src: string, profileDir: string | undefined, alone: Map<number, number>): Promise<{ levels: Record<string, Level>; maxListenersWarnings: number }> {
  const cache = await mkdtemp(path.join(os.tmpdir(), 'ernie-serve-path-'));
  const server = await startServer(src, cache, profileDir);
  const out: Record<string, Level> = {};
  try {
    await runLoad(server.base, 16, 16, 0); // warm-up: connections, JIT
    for (const c of LEVELS) {
      const r = await runLoad(server.base, c, MAX_TOKENS, c);
      const engineTokS = alone.get(c)!;
      const nominalTokS = (c * 1000) / STEP_MS;
      out[String(c)] = { ...r, engineTokS, nominalTokS, deliveredOverEngine: r.deliveredTokS / engineTokS, deliveredOverNominal: r.deliveredTokS / nominalTokS };
      console.log(
        `${label.padEnd(7)} ${String(c).padStart(4)} streams: delivered ${Math.round(r.deliveredTokS)} tok/s, engine ${Math.round(engineTokS)} tok/s ` +
          `(${(100 * out[String(c)]!.deliveredOverEngine).toFixed(1)}%), nominal ${nominalTokS} (${(100 * out[String(c)]!.deliveredOverNominal).toFixed(1)}%), ` +
          `TTFT p50 ${r.ttftMsP50.toFixed(1)} ms, longest gap p50 ${r.maxGapMsP50.toFixed(1)} ms / max ${r.maxGapMsMax.toFixed(1)} ms, errors ${r.errors}`,
      );
    }
    return { levels: out, maxListenersWarnings: server.warnings() };
  } finally {
    await server.stop();
    await rm(cache, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const baseDir = arg('--base');
  const profile = arg('--profile');
  if (profile) await mkdir(profile, { recursive: true });
  const result: Record<string, unknown> = {
    date: new Date().toISOString(),
    host: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}`,
    method: 'bench/README.md, "Serving path at GPU-like rates"',
    stepMs: STEP_MS,
    maxTokens: MAX_TOKENS,
  };
  const alone = new Map<number, number>();
  for (const c of LEVELS) {
    alone.set(c, await engineAlone(c));
    console.log(`engine alone ${String(c).padStart(4)} streams: ${Math.round(alone.get(c)!)} tok/s (nominal ${(c * 1000) / STEP_MS})`);
  }
  result.engineAloneTokS = Object.fromEntries(alone);
  if (baseDir) result.before = await runVariant('before', path.resolve(baseDir), profile && path.join(profile, 'before'), alone);
  result.after = await runVariant('after', path.resolve(here, '..'), profile && path.join(profile, 'after'), alone);
  if (profile) return; // profiling runs are slowed by the profiler: nothing is recorded
  await mkdir(path.join(here, 'results'), { recursive: true });
  await writeFile(path.join(here, 'results/serve-path-fake.json'), JSON.stringify(result, null, 2) + '\n');
}

await main();
