// `ernie-edge monitor` against real processes: a fake-engine sidecar (max 1 sequence, so extra
// requests wait) and a `--role gateway`. Healthy, overloaded (waiting past --max-waiting), slow (p99
// past --max-latency), live (tokens/s from counter deltas) and sidecar down; exit codes as documented.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, CliProcess, FAKE_BIN, fakeEnv, pollStatus, removeTempDirs, tempDir } from './process-helpers.js';

function monitor(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'monitor', '--url', base, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => resolve({ code, out }));
  });
}

let sidecar: CliProcess;
let gateway: CliProcess;
let base: string;
const complete = (maxTokens: number, signal?: AbortSignal, stream = false) =>
  fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', prompt: 'Hi', max_tokens: maxTokens, ignore_eos: true, stream }),
    signal,
  });

beforeAll(async () => {
  const sock = path.join(tempDir('ernie-mon-'), 'engine.sock');
  sidecar = new CliProcess(['serve', '--role', 'sidecar', '--engine', `unix:${sock}`, '--served-model-name', 'm', '--max-num-seqs', '1'], fakeEnv(tempDir('ernie-mon-cache-'), 10), FAKE_BIN);
  gateway = new CliProcess(['serve', '--role', 'gateway', '--engine', `unix:${sock}`, '--port', '0']);
  base = await gateway.baseURL();
  await pollStatus(`${base}/ready`, 200);
});
afterAll(async () => {
  for (const p of [gateway, sidecar]) {
    p?.kill('SIGKILL');
    await p?.exited;
  }
  removeTempDirs();
});

describe('ernie-edge monitor', () => {
  it('healthy: --once prints the line and exits 0', async () => {
    for (let i = 0; i < 3; i++) expect((await complete(3)).status).toBe(200);
    const r = await monitor(['--once', '--max-waiting', '5', '--max-latency', '30']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/ready \| running 0 waiting 0 \| kv \d+\.\d% \| ttft p50 \d+ms p99 \d+ms \| e2e p50 \S+ p99 \S+ \| gen - tok\/s/);
    expect(r.out).not.toContain('WARN');
  });

  it('slow: an e2e p99 over --max-latency warns and exits 1', async () => {
    const r = await monitor(['--once', '--max-latency', '0.001']);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/WARN LATENCY e2e p99 \d+ms > --max-latency 1ms/);
  });

  it('live: counts polls, reports tokens/s from counter deltas while a stream runs', async () => {
    const ac = new AbortController();
    const res = await complete(1000, ac.signal, true);
    const r = await monitor(['--count', '3', '--interval', '0.3']);
    ac.abort();
    await res.body?.cancel().catch(() => undefined);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('gen - tok/s'); // no previous poll yet
    const rate = Number(/gen (\S+) tok\/s/.exec(lines[2]!)?.[1]);
    expect(rate).toBeGreaterThan(10); // one token per 10 ms step: ~100 tok/s
    expect(lines[2]).toContain('running 1');
  });

  it('overloaded: waiting past --max-waiting warns and exits 1', async () => {
    const ac = new AbortController();
    const streams = await Promise.all(Array.from({ length: 4 }, () => complete(1000, ac.signal, true)));
    await expect.poll(async () => /vllm:num_requests_waiting\{[^}]*\} (\d+)/.exec(await (await fetch(`${base}/metrics`)).text())?.[1], { timeout: 10_000 }).toBe('3');
    const r = await monitor(['--once', '--max-waiting', '1']);
    ac.abort();
    await Promise.all(streams.map((s) => s.body?.cancel().catch(() => undefined)));
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/running 1 waiting 3/);
    expect(r.out).toContain('WARN WAITING 3 > --max-waiting 1');
  });

  it('sidecar down: not ready and engine down, exits 1; an unreachable URL too', async () => {
    sidecar.kill('SIGKILL');
    await sidecar.exited;
    await pollStatus(`${base}/ready`, 503);
    const r = await monitor(['--once']);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/NOT READY \| running - waiting -/);
    expect(r.out).toMatch(/WARN NOT READY: \/ready 503 \(engine unavailable/);
    expect(r.out).toContain('WARN ENGINE DOWN');
    gateway.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    const gone = await monitor(['--once', '--timeout', '2']);
    expect(gone.code).toBe(1);
    expect(gone.out).toContain('WARN UNREACHABLE');
  });

  it('usage errors exit 2', async () => {
    const r = await monitor(['--max-waiting', 'lots']);
    expect(r.code).toBe(2);
    expect(r.out).toContain('--max-waiting must be a number');
  });
});
