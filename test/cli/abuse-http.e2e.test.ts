// Connection abuse against a real `ernie-edge serve` (gateway + sidecar child, fake native engine):
// the attacks of issue 26 as raw node:net sockets, then the numbers. The gateway is the `serve` process
// itself; its RSS is read from /proc/PID/status. A victim stream runs through each attack; what is
// asserted is the load-independent form of issue 26's 200 ms victim gap (the loop probe,
// src/cli/loop-probe.ts: neither serving loop did a long stretch of CPU work without yielding), with the
// victim's wall gap reported beside it. Waits are on socket events, log lines and frames.
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LOOP_PROBE_ENV } from '../../src/cli/loop-probe.js';
import { cleanUpProcesses, CliProcess, expectLoopYields, FAKE_BIN, fakeEnv, LOOP_STRETCH_MS, pollStatus, sseFrames, takeLoopWindow, tempDir } from './process-helpers.js';

const MODEL = 'ernie-edge-default';
/** Engine step pace of the fake: the victim's frames come this far apart when nothing interferes. */
const STEP_MS = 10;
/** Issue 26's target for a victim's longest gap: a wall-clock figure, reported here (a loaded host's own gaps pass it). */
const VICTIM_GAP_MS = 200;
/**
 * What an attack may add to the gateway's peak RSS (before the fix: 104 MB → 1.8 GB for the pipelined
 * /metrics, +676 MB for /ready). The peak is mostly garbage, not held memory: the pipelined /ready
 * attack runs ~18,000 requests before the unread output pauses the socket, and their garbage fills the
 * young generation before a scavenge (Node 24 peaked at +70 to +130 MiB, Node 20 lower). What the gateway
 * holds is bounded by the count of requests it runs, asserted beside this.
 */
const MAX_RSS_GROWTH_MIB = 256;
/** The attack's pipelined requests: a gateway that ran them all would hold all their responses. */
const PIPELINED = 100_000;

/** The gateway's count of finished `GET route` requests (its http_requests_total, all statuses). */
async function handled(base: string, route: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^http_requests_total\{([^}]*)\} (\d+)$/gm)) {
    if (m[1]!.includes(`route="${route}"`) && m[1]!.includes('method="GET"')) n += Number(m[2]);
  }
  return n;
}

const procs: CliProcess[] = [];
afterEach(() => cleanUpProcesses(procs));

async function serve(extra: string[] = []): Promise<{ p: CliProcess; base: string; port: number }> {
  const p = new CliProcess(['serve', '--port', '0', ...extra], { ...fakeEnv(tempDir('ernie-cache-'), STEP_MS), [LOOP_PROBE_ENV]: '1' }, FAKE_BIN);
  procs.push(p);
  const base = await p.baseURL();
  await pollStatus(`${base}/ready`, 200);
  return { p, base, port: Number(new URL(base).port) };
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) / 1024;
}

/**
 * A streamed completion of `tokens` tokens; returns the longest gap between its frames that carry text
 * and the gateway's peak RSS, sampled at every frame.
 * NOTE: the frame with the finish reason is left out of the gaps: it comes about a second after the last
 * text with the fake engine, attack or not, on main too (reported in issue 26's notes; not this file's
 * subject).
 */
async function victimStream(base: string, gatewayPid: number, tokens: number): Promise<{ maxGapMs: number; peakRssMiB: number; frames: number }> {
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: 'Hi', max_tokens: tokens, ignore_eos: true, stream: true }),
  });
  expect(res.status).toBe(200);
  let last = performance.now();
  let maxGapMs = 0;
  let peakRssMiB = 0;
  let frames = 0;
  for await (const frame of sseFrames(res)) {
    peakRssMiB = Math.max(peakRssMiB, rssMiB(gatewayPid));
    if (frame === '[DONE]') break;
    const chunk = JSON.parse(frame) as { choices: { text: string }[] };
    if (!chunk.choices[0]?.text) continue;
    const now = performance.now();
    if (frames > 0) maxGapMs = Math.max(maxGapMs, now - last); // the first frame waits for the prompt
    last = now;
    frames++;
  }
  return { maxGapMs, peakRssMiB, frames };
}

/** Opens a connection that writes `payload` and never reads; resolves once the kernel took all of it. */
function neverReads(port: number, payload: Buffer): { socket: net.Socket; written: Promise<void> } {
  const socket = net.connect(port, '127.0.0.1');
  socket.pause();
  socket.on('error', () => undefined);
  const written = new Promise<void>((resolve) => socket.write(payload, () => resolve()));
  return { socket, written };
}

describe('ernie-edge serve under connection abuse (fake engine)', () => {
  for (const route of ['/metrics', '/ready']) {
    it.runIf(existsSync('/proc/thread-self/schedstat'))(`100,000 pipelined GET ${route} on one connection that never reads: gateway RSS bounded, neither serving loop stalled, a victim stream served`, async () => {
      const { p, base, port } = await serve();
      const pid = p.child.pid!;
      const sidecarPid = Number((await p.waitForLog((l) => l.msg === 'sidecar ready')).sidecarPid);
      await victimStream(base, pid, 20); // warm: the victim's code paths are compiled
      for (let i = 0; i < 20; i++) await (await fetch(`${base}${route}`)).text();
      const baseline = rssMiB(pid);
      // The same victim with no attack, on this host now: reported beside the gap under attack.
      const calm = await victimStream(base, pid, 150);
      const calmProbe = performance.now();
      expect((await fetch(`${base}/health`)).status).toBe(200);
      const calmProbeMs = performance.now() - calmProbe;

      const loops = () => Promise.all([takeLoopWindow(p, pid), takeLoopWindow(p, sidecarPid)]);
      await loops();
      const before = await handled(base, route);
      const attack = neverReads(port, Buffer.from(`GET ${route} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(PIPELINED)));
      await attack.written; // 3.8 MB in the kernel's buffers and the gateway's hands
      const victim = await victimStream(base, pid, 150);
      const probe = performance.now();
      expect((await fetch(`${base}/health`)).status).toBe(200);
      const probeMs = performance.now() - probe;
      const [gateway, sidecar] = await loops();
      // Read while the attacker is still connected and still not reading: the handled count the attack
      // reached with its output unread (the victim's stream and the probes took over a second).
      const ran = (await handled(base, route)) - before;
      attack.socket.destroy();

      console.log(
        `[abuse-http] pipelined ${route}: longest CPU stretch without yielding: gateway loop ${gateway.maxCpuMs} ms (GC pauses in it ${gateway.maxCpuGcMs}), sidecar loop ${sidecar.maxCpuMs} ms (GC ${sidecar.maxCpuGcMs}; bound ${LOOP_STRETCH_MS} less GC); ` +
          `victim's longest gap ${victim.maxGapMs.toFixed(0)} ms (target ${VICTIM_GAP_MS} on an idle host; alone ${calm.maxGapMs.toFixed(0)}), /health ${probeMs.toFixed(0)} ms (alone ${calmProbeMs.toFixed(0)}); ` +
          `gateway RSS ${baseline.toFixed(0)} MiB, peak +${(victim.peakRssMiB - baseline).toFixed(1)} (calm stream +${(calm.peakRssMiB - baseline).toFixed(1)}); ${ran} of the ${PIPELINED} pipelined requests ran`,
      );
      expect(victim.frames).toBeGreaterThan(10);
      for (const w of [gateway, sidecar]) expectLoopYields(w);
      expect(ran).toBeLessThan(PIPELINED / 2);
      expect(victim.peakRssMiB - baseline).toBeLessThan(MAX_RSS_GROWTH_MIB);
    });
  }

  it('50 HTTP connections that never send a byte are closed after --timeout-headers, with 408', async () => {
    const { port, base } = await serve(['--timeout-headers', '0.5']);
    const conns = Array.from({ length: 50 }, () => {
      const socket = net.connect(port, '127.0.0.1');
      let got = '';
      socket.on('data', (d: Buffer) => (got += d.toString()));
      socket.on('error', () => undefined);
      const opened = performance.now();
      const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - opened)));
      return { closed, got: () => got };
    });
    const lifetimes = await Promise.all(conns.map((c) => c.closed));
    for (const c of conns) expect(c.got()).toMatch(/^HTTP\/1\.1 408 /);
    expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(450);
    expect(Math.max(...lifetimes)).toBeLessThan(30_000); // before: all 50 open after 300 s
    expect((await fetch(`${base}/health`)).status).toBe(200);
  });

  it('an idle keep-alive connection is closed after --timeout-keep-alive', async () => {
    const { port } = await serve(['--timeout-keep-alive', '0.5']);
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    const answered = performance.now();
    await closed;
    expect(got).toMatch(/^HTTP\/1\.1 200 /);
    expect(performance.now() - answered).toBeGreaterThanOrEqual(450);
  });

  it('SIGTERM with --drain-timeout 1 and 16 long streams: each ends with an error event and [DONE]', async () => {
    const { p, base } = await serve(['--drain-timeout', '1']);
    const streams = await Promise.all(
      Array.from({ length: 16 }, () =>
        fetch(`${base}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODEL, prompt: 'Hi', max_tokens: 4000, ignore_eos: true, stream: true }),
        }),
      ),
    );
    const readers = streams.map((res) => {
      const frames = sseFrames(res);
      return { first: frames.next(), rest: frames };
    });
    for (const r of readers) expect((await r.first).done).toBe(false);
    p.kill('SIGTERM');
    for (const r of readers) {
      const tail: string[] = [];
      for await (const f of r.rest) tail.push(f);
      expect(tail.at(-1)).toBe('[DONE]');
      const error = JSON.parse(tail.at(-2)!) as { error: { message: string; type: string } };
      expect(error.error.message).toMatch(/drain timeout/);
      expect(error.error.type).toBe('service_unavailable_error');
    }
    expect(await p.closed).toBe(0);
    expect(p.logs.some((l) => l.msg === 'drain timeout: remaining connections were cut')).toBe(true);
  });
});
