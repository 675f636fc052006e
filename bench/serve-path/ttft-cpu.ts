// The first-token path's CPU cost per request, serving path alone, A/B in one run: `ernie-edge serve`
// over the fake native engine (./fake-serve.js, one gateway process), one streaming /v1/completions at
// a time (token-id prompts of 32-512 ids, `max_tokens` 1, greedy, ignore_eos, return_token_ids: the
// request's whole life is its first-token path plus the end of its stream), and the CPU time (user +
// sys, /proc/PID/stat) the gateway and the sidecar processes spent per request. CPU time, not wall
// time: it holds on a loaded host, where wall-clock latencies do not. Servers from each checkout
// (SERVE_PATH_SRC) take turns in ROUNDS rounds of N requests each, so a drift falls on all of them.
//   node --import tsx bench/serve-path/ttft-cpu.ts [DIR[:dist] …]   (no DIR: this checkout alone)
// DIR:dist runs that checkout's compiled CLI (its dist/, `npm run build`) instead of its sources through tsx.
// Knobs: N (default 400), ROUNDS (default 4), WARMUP (default 300 requests per server before counting).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listeningUrl, untilReady } from '../server-url.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.N ?? 400);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const WARMUP = Number(process.env.WARMUP ?? 300);
const CLK_TCK = 100;

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function prompt(i: number): number[] {
  let s = 7 + i * 7919;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  return Array.from({ length: 32 + Math.floor(rnd() * 481) }, () => 1000 + Math.floor(rnd() * 99_000));
}

/** One streamed request; resolves with the client-seen time to the first chunk carrying a token (ms). */
function one(base: string, i: number): Promise<number> {
  const body = JSON.stringify({ prompt: prompt(i), max_tokens: 1, temperature: 0, ignore_eos: true, stream: true, return_token_ids: true });
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = NaN;
    let buf = '';
    const req = http.request(new URL('/v1/completions', base), { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buf += d;
        if (Number.isNaN(first) && buf.includes('"token_ids":[')) first = performance.now() - t0;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(first) : reject(new Error(`HTTP ${res.statusCode}: ${buf.slice(0, 200)}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** user + sys seconds of a process (its threads included). */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

interface Server { label: string; base: string; gateway: number; sidecar: number; child: ChildProcess }

async function start(spec: string, cache: string): Promise<Server> {
  const dist = spec.endsWith(':dist');
  const src = dist ? spec.slice(0, -':dist'.length) : spec;
  const args = ['serve', '--port', '0', '--api-server-count', '1', '--max-num-seqs', '64', '--kv-cache-memory', '2GiB'];
  const env: NodeJS.ProcessEnv = { ...process.env, SERVE_PATH_SRC: src, FAKE_ENGINE_STEP_MS: '1', ERNIE_EDGE_CACHE: cache, SERVE_PATH_DIST: dist ? '1' : '0' };
  const child = spawn(process.execPath, [path.join(here, 'fake-serve.js'), ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const base = await listeningUrl(child);
  await untilReady(base, 20, 3000);
  const kids = children(child.pid!);
  if (kids.length !== 1) throw new Error(`expected one sidecar child of ${child.pid}, found ${kids.join(',')}`);
  return { label: spec, base, gateway: child.pid!, sidecar: kids[0]!, child };
}

async function main(): Promise<void> {
  const dirs = process.argv.slice(2);
  const srcs = dirs.length > 0 ? dirs.map((d) => (d.endsWith(':dist') ? `${path.resolve(d.slice(0, -5))}:dist` : path.resolve(d))) : [path.resolve(here, '../..')];
  const cache = await mkdtemp(path.join(os.tmpdir(), 'ttft-cpu-'));
  const servers: Server[] = [];
  for (const s of srcs) servers.push(await start(s, cache));
  for (const s of servers) for (let i = 0; i < WARMUP; i++) await one(s.base, -1 - i);
  const acc = servers.map(() => ({ gw: 0, sc: 0, n: 0, ttft: [] as number[] }));
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < servers.length; k++) {
      const idx = (k + r) % servers.length;
      const s = servers[idx]!;
      const [g0, s0] = [cpuSeconds(s.gateway), cpuSeconds(s.sidecar)];
      for (let i = 0; i < N; i++) acc[idx]!.ttft.push(await one(s.base, r * N + i));
      acc[idx]!.gw += cpuSeconds(s.gateway) - g0;
      acc[idx]!.sc += cpuSeconds(s.sidecar) - s0;
      acc[idx]!.n += N;
    }
  }
  for (const [k, s] of servers.entries()) {
    const a = acc[k]!;
    const t = [...a.ttft].sort((x, y) => x - y);
    console.log(`${s.label}: CPU ms per request: gateway ${((1000 * a.gw) / a.n).toFixed(3)}, sidecar ${((1000 * a.sc) / a.n).toFixed(3)}, both ${((1000 * (a.gw + a.sc)) / a.n).toFixed(3)} (${a.n} requests); client first token p50 ${t[t.length >> 1]!.toFixed(2)} ms (wall, this host)`);
  }
  for (const s of servers) {
    s.child.kill('SIGTERM');
    await new Promise((r) => s.child.once('exit', r));
  }
  await rm(cache, { recursive: true, force: true });
  agent.destroy();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
