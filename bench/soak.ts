// `npm run bench:soak`: 3,000 mixed requests (streamed or not, n up to 4, prompts of 5 to 1,500 words,
// 4 to 128 new tokens, one in ten aborted by the client) against `ernie-edge serve` with the default KV
// pool (no --kv-cache-memory: min(4 GiB, 25% of the memory the process can take)), 16 at a time, and
// the RSS of the gateway and the sidecar sampled every 500 ms. The claim under test (issue #26): RSS is
// flat after start-up, because the pool is resident from load, so a memory limit is met at start.
// The model: the tiny formula checkpoint of the engine tests (test/fixtures/golden/tiny, vocabulary
// widened to the test tokenizer's) so that 3,000 requests take minutes on a CPU; the pool's size does
// not depend on the model. Result: bench/results/soak.json (method: bench/README.md, "Soak").
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFormulaCheckpoint } from '../src/sidecar/model/formula.js';
import { childPids, rssBytes, slope } from './soak/rss.js';
import { soakRequests, type SoakRequest } from './soak/workload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const REQUESTS = Number(process.env.SOAK_REQUESTS ?? 3000);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16);
const SAMPLE_MS = 500;
const MODEL = 'tiny';
const MiB = 2 ** 20;

async function tinyCheckpoint(dir: string): Promise<void> {
  const golden = path.join(here, '../test/fixtures/golden');
  const config = JSON.parse(await readFile(path.join(golden, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: 3072, max_position_embeddings: 4096 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(golden, 'tokenizer', 'hf', f), path.join(dir, f));
}

/** The sidecar's "model loaded" log line (KV blocks and bytes, device, threads). */
function loadedLine(log: string): unknown {
  const line = log.split('\n').find((l) => l.includes('"kvGiB"') || l.includes('"kvBlocks"'));
  return line ? JSON.parse(line) : null;
}

async function one(base: string, r: SoakRequest): Promise<string> {
  const ac = new AbortController();
  const timer = r.abortAfterMs !== null ? setTimeout(() => ac.abort(), r.abortAfterMs) : null;
  try {
    const res = await fetch(`${base}${r.route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(r.body), signal: ac.signal });
    if (!r.stream || res.status !== 200) {
      await res.arrayBuffer();
      return String(res.status);
    }
    const reader = res.body!.getReader();
    let chunks = 0;
    for (;;) {
      const { done } = await reader.read();
      if (done) return '200';
      if (r.abortAfterChunks !== null && ++chunks >= r.abortAfterChunks) {
        ac.abort();
        return 'aborted';
      }
    }
  } catch (e) {
    if (ac.signal.aborted) return 'aborted';
    return `error: ${(e as Error).message}`;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ernie-soak-'));
  await tinyCheckpoint(dir);
  const bin = path.resolve(here, '../bin/ernie-edge.js');
  const child = spawn(process.execPath, [bin, 'serve', '--model', dir, '--served-model-name', MODEL, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.once('exit', r));
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  const base = await new Promise<string>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`server exited ${c}`)));
    child.stdout!.on('data', () => {
      const m = log.match(/"url":"(http:\/\/[^"]+)"/);
      if (m) resolve(m[1]!);
    });
  });
  const t0 = performance.now();
  while ((await fetch(`${base}/ready`).then((r) => r.status, () => 0)) !== 200) await new Promise((r) => setTimeout(r, 100));
  const readyS = (performance.now() - t0) / 1000;
  const gatewayPid = child.pid!;
  const sidecarPid = childPids(gatewayPid)[0]!;
  const sample = (completed: number) => ({ t: +((performance.now() - t0) / 1000).toFixed(2), completed, gatewayMiB: +((rssBytes(gatewayPid) ?? 0) / MiB).toFixed(1), sidecarMiB: +((rssBytes(sidecarPid) ?? 0) / MiB).toFixed(1) });
  const atReady = sample(0);
  console.log(`ready in ${readyS.toFixed(1)} s: gateway ${atReady.gatewayMiB} MiB, sidecar ${atReady.sidecarMiB} MiB`);

  const reqs = soakRequests(REQUESTS, MODEL);
  const outcomes: Record<string, number> = {};
  let next = 0;
  let completed = 0;
  const samples = [atReady];
  const sampler = setInterval(() => samples.push(sample(completed)), SAMPLE_MS);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < reqs.length) {
        const o = await one(base, reqs[next++]!);
        outcomes[o] = (outcomes[o] ?? 0) + 1;
        if (++completed % 250 === 0) console.log(`${completed}/${REQUESTS}: sidecar ${samples.at(-1)!.sidecarMiB} MiB, gateway ${samples.at(-1)!.gatewayMiB} MiB`);
      }
    }),
  );
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  const end = sample(completed);
  samples.push(end);
  const stats = await (await fetch(`${base}/metrics`)).text();
  child.kill('SIGTERM');
  await exited;
  await rm(dir, { recursive: true, force: true });

  const second = samples.filter((s) => s.completed >= REQUESTS / 2);
  const perK = (key: 'sidecarMiB' | 'gatewayMiB') => +(slope(second.map((s) => s.completed), second.map((s) => s[key])) * 1000).toFixed(1);
  const result = {
    date: new Date().toISOString(),
    host: { cpus: os.cpus().length, memGiB: +(os.totalmem() / 2 ** 30).toFixed(1), loadavg: os.loadavg().map((x) => +x.toFixed(1)) },
    config: { requests: REQUESTS, concurrency: CONCURRENCY, model: 'tiny formula checkpoint (test/fixtures/golden/tiny, vocab 3072)', kvPool: 'default (no --kv-cache-memory)', loaded: loadedLine(log) },
    readySeconds: +readyS.toFixed(1),
    seconds: +seconds.toFixed(1),
    outcomes,
    rss: {
      atReady,
      end,
      maxSidecarMiB: Math.max(...samples.map((s) => s.sidecarMiB)),
      maxGatewayMiB: Math.max(...samples.map((s) => s.gatewayMiB)),
      sidecarGrowthMiB: +(end.sidecarMiB - atReady.sidecarMiB).toFixed(1),
      gatewayGrowthMiB: +(end.gatewayMiB - atReady.gatewayMiB).toFixed(1),
      secondHalfSlopeMiBPer1000: { sidecar: perK('sidecarMiB'), gateway: perK('gatewayMiB') },
    },
    engine: Object.fromEntries(
      ['vllm:kv_cache_usage_perc', 'ernie_edge:num_requests_running_max', 'ernie_edge:num_requests_waiting_max', 'vllm:num_preemptions_total', 'ernie_edge:fair_preemptions_total'].map((k) => [
        k,
        Number(stats.split('\n').find((l) => l.startsWith(k))?.split(' ').at(-1) ?? NaN),
      ]),
    ),
    samples,
  };
  await mkdir(path.join(here, 'results'), { recursive: true });
  await writeFile(path.join(here, 'results', 'soak.json'), JSON.stringify(result, null, 1) + '\n');
  console.log(JSON.stringify({ ...result, samples: `${samples.length} samples` }, null, 1));
}

await main();
