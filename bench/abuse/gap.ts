// The large-input rows of issue #26 against `ernie-edge serve` (tiny formula checkpoint, the e2e test's
// flags), with the victim's longest gap between SSE frames for each, where it came from, and the RSS
// of both halves after each row:
// - threads: every thread's CPU time and run-queue wait inside the longest gap (./threads.ts; this
//   process's too, as 'client': it sends the attack and reads the victim): a
//   thread on the stream's path that ran the whole gap was busy; one that waited was not scheduled;
// - with PROFILE=DIR, V8 CPU profiles of every JS thread of the gateway and the sidecar (`--cpu-prof`)
//   and their busy stretches that overlap the longest gap (./stalls.ts);
// - host: the other processes' share of the cores during the row (this benchmark's own processes
//   left out), since the gaps on a shared host are partly the host's;
// - loops: each serving event loop's longest stretch of CPU work without yielding during the attack
//   (the loop probe, src/cli/loop-probe.ts: what the e2e test asserts, load-independent), and the
//   victim's tokens: the most one chunk carried, and whether every stream is a prefix of the greedy
//   continuation.
//
//   node --import tsx bench/abuse/gap.ts [idle|burn|tokenize|chat|messages ...]   (default: all)
//   PROFILE=/tmp/prof node --import tsx bench/abuse/gap.ts chat
//   OUT=bench/results/abuse-gap.json LABEL=after node --import tsx bench/abuse/gap.ts   (appends a run)
//
// Rows: idle (3 s, the host's own noise), burn (20 s of one core busy in another process), tokenize (4 x /tokenize of a 4 MB prompt), chat (2 x a chat
// of one 4 MB message: a 400 before tokenizing), messages (2 x /tokenize of a 4,096-message chat).
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { overlapping, readProfile, stalls } from './stalls.js';
import { ThreadSampler } from './threads.js';
import { drain, jsonBytes, postJson, VICTIM_PROMPT, victimGap } from './victim.js';
import { LOOP_PROBE_ENV, type LoopProbeWindow } from '../../src/cli/loop-probe.js';
import { listeningUrl, untilReady } from '../server-url.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const MODEL = 'tiny';
const BIG = 'The quick brown fox jumps over the lazy dog; 0123456789. '.repeat(4e6 / 57);

// The attacks' bodies, serialized before any row's window (./victim.ts: postJson).
const TOKENIZE_BODY = jsonBytes({ model: MODEL, prompt: BIG });
const CHAT_BODY = jsonBytes({ model: MODEL, messages: [{ role: 'user', content: BIG }], max_tokens: 4 });
const MESSAGES_BODY = jsonBytes({ model: MODEL, messages: Array.from({ length: 4096 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` })) });

const ROWS: Record<string, (base: string) => Promise<unknown>> = {
  idle: () => new Promise((r) => setTimeout(r, 3000)),
  // The control for tokenize: one core kept busy by another process for 20 s, no request at all (the
  // tokenizer worker keeps a core busy for as long as the tokenize row runs).
  burn: () =>
    new Promise((resolve) => spawn(process.execPath, ['-e', 'const end = Date.now() + 20000; while (Date.now() < end);'], { stdio: 'ignore' }).once('exit', resolve)),
  tokenize: (base) => Promise.all(Array.from({ length: 4 }, async () => (await drain(await postJson(base, '/tokenize', TOKENIZE_BODY))).bytes)),
  chat: (base) => Promise.all(Array.from({ length: 2 }, async () => (await postJson(base, '/v1/chat/completions', CHAT_BODY)).status)),
  messages: (base) => Promise.all(Array.from({ length: 2 }, async () => (await postJson(base, '/tokenize', MESSAGES_BODY)).status)),
};

const TICK_MS = 10; // USER_HZ = 100 on Linux

/** CPU time (ms) of a process, its threads together (utime + stime of /proc/PID/stat). */
function cpuMs(pid: number | 'self'): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** All cores' busy and total time (ms), from /proc/stat. */
function machineMs(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times: t } of os.cpus()) {
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busy, total };
}

/** The share of all cores' time that processes other than `pids` (and this one) took, between start and stop. */
function othersShare(pids: number[]): () => number {
  const ours = () => cpuMs('self') + pids.reduce((a, p) => a + cpuMs(p), 0);
  const [m0, o0] = [machineMs(), ours()];
  return () => {
    const [m1, o1] = [machineMs(), ours()];
    return m1.total > m0.total ? +Math.max(0, (m1.busy - m0.busy - (o1 - o0)) / (m1.total - m0.total)).toFixed(3) : 0;
  };
}

const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m?.[1] ?? 0) / 1024);
};

/** How far above the warm-up baseline each half's RSS may stay once an attack is over (the e2e test's bound). */
const RSS_BOUND_MIB = 64;
const SETTLE_S = Number(process.env.SETTLE_S ?? 60);

/** Polls both halves' RSS until each is within RSS_BOUND_MIB of the baseline (or SETTLE_S pass): how long that took, and the RSS then. */
async function settle(pids: Record<'gateway' | 'sidecar', number>, baseline: Record<'gateway' | 'sidecar', number>): Promise<{ seconds: number; within: boolean; gateway: number; sidecar: number }> {
  const t0 = performance.now();
  for (;;) {
    const now = { gateway: rssMiB(pids.gateway), sidecar: rssMiB(pids.sidecar) };
    const within = now.gateway - baseline.gateway <= RSS_BOUND_MIB && now.sidecar - baseline.sidecar <= RSS_BOUND_MIB;
    const seconds = +((performance.now() - t0) / 1000).toFixed(1);
    if (within || seconds >= SETTLE_S) return { seconds, within, ...now };
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The `loop probe` lines of the children's stdout; take(pid) sends SIGUSR2 to pid and resolves with its next window. */
function loopProbeLines(children: ChildProcess[]): { take: (pid: number) => Promise<LoopProbeWindow> } {
  const waiting = new Map<number, (w: LoopProbeWindow) => void>();
  for (const c of children) {
    let buf = '';
    c.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.includes('"loop probe"')) continue;
        const l = JSON.parse(line) as { pid: number; loopProbe: LoopProbeWindow };
        waiting.get(l.pid)?.(l.loopProbe);
        waiting.delete(l.pid);
      }
    });
  }
  return {
    take: (pid) =>
      new Promise((resolve) => {
        waiting.set(pid, resolve);
        process.kill(pid, 'SIGUSR2');
      }),
  };
}

/** The sidecar's pid, from the supervisor's "sidecar ready" log line on the child's stdout. */
function sidecarPid(child: ChildProcess): Promise<number> {
  let log = '';
  return new Promise((resolve) =>
    child.stdout!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /"sidecarPid":(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    }),
  );
}

async function main(): Promise<void> {
  const rows = process.argv.slice(2);
  for (const r of rows) if (!ROWS[r]) throw new Error(`unknown row ${r}; rows: ${Object.keys(ROWS).join(', ')}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ernie-abuse-gap-'));
  const golden = path.join(here, '../../test/fixtures/golden');
  const config = JSON.parse(await readFile(path.join(golden, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: 3072, max_position_embeddings: 2048 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(golden, 'tokenizer', 'hf', f), path.join(dir, f));
  const profile = process.env.PROFILE;
  const env = { ...process.env, ERNIE_EDGE_CACHE: path.join(dir, 'cache'), [LOOP_PROBE_ENV]: '1' };
  const bin = path.resolve(here, '../../bin/ernie-edge.js');
  const engineFlags = ['--model', dir, '--served-model-name', MODEL, '--threads', '1', '--kv-cache-memory', '64MiB', '--max-num-seqs', '8', '--max-num-queued-reqs', '4'];
  // Profiled: the two halves as their own processes (`serve` starts its sidecar without node flags).
  const sock = path.join(dir, 'engine.sock');
  const commands = profile
    ? [
        [`--cpu-prof`, `--cpu-prof-dir=${profile}`, bin, 'serve', '--role', 'sidecar', '--engine', `unix:${sock}`, ...engineFlags],
        [`--cpu-prof`, `--cpu-prof-dir=${profile}`, bin, 'serve', '--role', 'gateway', '--engine', `unix:${sock}`, '--port', '0'],
      ]
    : [[bin, 'serve', ...engineFlags, '--port', '0']];
  const children = commands.map((c) => spawn(process.execPath, c, { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  const exited = Promise.all(children.map((c) => new Promise((r) => c.once('exit', r))));
  const child = children.at(-1)!;
  const probeLines = loopProbeLines(children);
  const scPid = profile ? Promise.resolve(children[0]!.pid!) : sidecarPid(child);
  // A failed row must not leave the servers running.
  const stopAll = () => {
    for (const c of [...children].reverse()) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  };
  process.once('uncaughtException', (e) => {
    stopAll();
    throw e;
  });
  const base = await listeningUrl(child);
  await untilReady(base, 100);
  const pids = { gateway: child.pid!, sidecar: await scPid };
  // Warm-up: one victim stream through both halves, so the RSS baseline is the served state's.
  await victimGap(base, MODEL, () => new Promise((r) => setTimeout(r, 1000)));
  const loops = async () => {
    const [gateway, sidecar] = await Promise.all([probeLines.take(pids.gateway), probeLines.take(pids.sidecar)]);
    return { gateway, sidecar };
  };
  const refRes = await postJson(base, '/v1/completions', { model: MODEL, prompt: VICTIM_PROMPT, max_tokens: 1900, temperature: 0, ignore_eos: true, return_token_ids: true });
  const reference = ((await refRes.json()) as { choices: { token_ids: number[] }[] }).choices[0]!.token_ids;
  const procName = (pid: number) => (pid === pids.gateway ? 'gateway' : pid === pids.sidecar ? 'sidecar' : 'client');
  const rssBaseline = { gateway: rssMiB(pids.gateway), sidecar: rssMiB(pids.sidecar) };
  const out: Record<string, unknown>[] = [];
  for (const row of rows.length ? rows : Object.keys(ROWS)) {
    const t0 = performance.now();
    // This process too: the victim's frames are timestamped on its event loop, beside the attack's uploads and downloads.
    const sampler = new ThreadSampler([pids.gateway, pids.sidecar, process.pid]).start();
    const others = othersShare([pids.gateway, pids.sidecar]);
    // The probe's windows bracket the attack itself.
    const { gapMs, gapAtMs, gapWindow, chunks, maxFrameTokens, streams, result: bracketed } = await victimGap(base, MODEL, async () => {
      await loops();
      const result = await ROWS[row]!(base);
      return { result, loops: await loops() };
    });
    const { result } = bracketed;
    sampler.stop();
    const inGap = sampler.use(...gapWindow);
    const inRow = sampler.use(sampler.startedMs, sampler.stoppedMs);
    const r = {
      row,
      gapMs: +gapMs.toFixed(1),
      gapAtS: +(gapAtMs / 1000).toFixed(2),
      gapWindow: gapWindow.map((x) => +x.toFixed(1)),
      chunks,
      seconds: +((performance.now() - t0) / 1000).toFixed(1),
      result,
      loops: bracketed.loops,
      victim: {
        tokens: streams.reduce((a, x) => a + x.ids.length, 0),
        streams: streams.length,
        maxFrameTokens,
        inOrder: streams.every((x) => x.ids.every((id, i) => id === reference[i]) && (x.finish === null || x.ids.length === reference.length)),
      },
      othersShare: others(),
      loadavg: os.loadavg().map((x) => +x.toFixed(1)),
      rssMiB: { gateway: rssMiB(pids.gateway), sidecar: rssMiB(pids.sidecar), baseline: rssBaseline },
      // Threads of both processes inside the longest gap (sampled every 10 ms: the window is widened to the samples around it).
      inGap: { ...inGap, threads: inGap.threads.slice(0, 8).map((t) => ({ ...t, proc: procName(t.pid) })) },
      // The same over the whole row: each thread's CPU time and run-queue wait per second of the row.
      inRow: inRow.threads.slice(0, 8).map((t) => ({ proc: procName(t.pid), tid: t.tid, name: t.name, runPerS: +(t.runMs / (sampler.stoppedMs - sampler.startedMs)).toFixed(3), waitPerS: +(t.waitMs / (sampler.stoppedMs - sampler.startedMs)).toFixed(3) })),
    };
    const settled = await settle(pids, rssBaseline);
    console.log(JSON.stringify({ ...r, settled }));
    out.push({ ...r, settled });
  }
  stopAll();
  await exited;
  await rm(dir, { recursive: true, force: true });
  if (profile) {
    for (const f of (await readdir(profile)).filter((f) => f.endsWith('.cpuprofile'))) {
      const s = stalls(readProfile(path.join(profile, f)), 20);
      for (const r of out) {
        const hit = overlapping(s, r.gapWindow as [number, number]);
        if (hit.length) console.log(JSON.stringify({ row: r.row, profile: f, stretches: hit.map(({ paths: _, ...x }) => ({ ...x, fromGapStartMs: +(x.atMs - (r.gapWindow as number[])[0]!).toFixed(1) })) }));
      }
    }
  }
  if (process.env.OUT) {
    const file = process.env.OUT;
    const prev = await readFile(file, 'utf8').then((t) => JSON.parse(t) as { runs: unknown[] }, () => ({ runs: [] }));
    const run = { label: process.env.LABEL ?? 'run', date: new Date().toISOString(), cores: os.cpus().length, node: process.version, rows: out };
    await writeFile(file, JSON.stringify({ ...prev, runs: [...prev.runs, run] }, null, 1) + '\n');
  }
}

await main();
