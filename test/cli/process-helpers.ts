// Spawns `node bin/ernie-edge.js …` (or FAKE_BIN, the same CLI over the fake native engine) as a real
// process and reads its JSON log lines (stdout is not a TTY, so pino writes JSON). Waiting is event-driven (log lines, exit) or polling for readiness.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { LoopProbeWindow } from '../../src/cli/loop-probe.js';

export const BIN = fileURLToPath(new URL('../../bin/ernie-edge.js', import.meta.url));
/** The CLI with the fake native engine injected (test/doubles/fake-bin.js); configure it with fakeEnv(). */
export const FAKE_BIN = fileURLToPath(new URL('../doubles/fake-bin.js', import.meta.url));

export type LogLine = Record<string, unknown> & { msg?: string };

export class CliProcess {
  readonly logs: LogLine[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  /**
   * The exit code once the process's output is all read ('close': its stdio streams ended). Use it
   * before reading `logs` after an exit: at 'exit' the last lines may still be in the pipe. A
   * supervisor killed with children alive that share its stdout resolves only when they exit.
   */
  readonly closed: Promise<number | null>;
  private waiters: { pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  readonly child: ChildProcess;

  constructor(args: string[], env: NodeJS.ProcessEnv = {}, bin: string = BIN) {
    this.child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    this.child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let parsed: LogLine;
        try {
          parsed = JSON.parse(line) as LogLine;
        } catch {
          parsed = { msg: line };
        }
        this.logs.push(parsed);
        this.waiters = this.waiters.filter((w) => (w.pred(parsed) ? (w.resolve(parsed), false) : true));
      }
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.closed = new Promise((resolve) => this.child.once('close', (code) => resolve(code)));
  }

  /** Resolves with the first log line (past or future) matching pred; rejects if the process exits first. */
  waitForLog(pred: (l: LogLine) => boolean): Promise<LogLine> {
    const seen = this.logs.find(pred);
    if (seen) return Promise.resolve(seen);
    return Promise.race([
      new Promise<LogLine>((resolve) => this.waiters.push({ pred, resolve })),
      this.exited.then((code) => {
        throw new Error(`process exited (${code}) before the log line; stderr: ${this.stderr}\nlogs: ${JSON.stringify(this.logs.slice(-5))}`);
      }),
    ]);
  }

  async baseURL(): Promise<string> {
    const l = await this.waitForLog((x) => x.msg === 'gateway listening');
    return String(l.url);
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}

const made: string[] = [];
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}
/** Removes every directory tempDir made (call after the processes using them have exited). */
/** A test's afterEach: kills every process it started (SIGKILL, awaited) and removes the temp dirs. */
export async function cleanUpProcesses(procs: CliProcess[]): Promise<void> {
  for (const p of procs.splice(0)) {
    p.kill('SIGKILL');
    await p.exited;
  }
  removeTempDirs();
}

export function removeTempDirs(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Polls until `url` answers `status` (readiness probes: the one place tests wait on time). */
export async function pollStatus(url: string, status: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: number | string = 'none';
  while (Date.now() < deadline) {
    last = await fetch(url).then(
      (r) => r.status,
      (e: unknown) => String(e),
    );
    if (last === status) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (last: ${last})`);
}

/** Reads an SSE body frame by frame. */
export async function* sseFrames(res: Response): AsyncGenerator<string> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (frame.startsWith('data: ')) yield frame.slice(6);
    }
  }
}

/** The environment of a FAKE_BIN process: its cache root and the fake engine's step pace. */
export const fakeEnv = (cache: string, stepMs = 0): NodeJS.ProcessEnv => ({
  FAKE_ENGINE_STEP_MS: String(stepMs),
  ERNIE_EDGE_CACHE: cache,
});

/**
 * The bound on a serving event loop's longest stretch of CPU work without yielding while an attack runs
 * (issue #26, the loop probe: src/cli/loop-probe.ts): half the 200 ms victim gap (no single
 * stretch spends the gap's budget by itself), about twice the longest stretch measured on the attacks,
 * and far below the regressions it guards (a 4 MB prompt tokenized on the sidecar's loop: seconds).
 * Figures and reasoning: bench/README.md, "What the test asserts".
 */
export const LOOP_STRETCH_MS = 100;

/**
 * Asserts a loop window against LOOP_STRETCH_MS: the serving code's own longest stretch, that is the
 * stretch less V8's collector pauses inside it (on a 2-core host whose cores another job takes, the
 * collector's helper threads get none and its marking lands on the main thread: a CI run read a 110.75 ms
 * stretch this way while a native build ran beside it), and, pauses included, under 4 bounds, which the
 * regression it guards (inline tokenizing) still exceeds.
 */
export function expectLoopYields(w: LoopProbeWindow): void {
  expect(w.turns).toBeGreaterThan(0);
  expect(w.maxCpuLessGcMs, 'the loop probe reports GC pauses (ERNIE_EDGE_LOOP_PROBE=1)').toBeDefined();
  expect(w.maxCpuLessGcMs!).toBeLessThan(LOOP_STRETCH_MS);
  expect(w.maxCpuMs).toBeLessThan(4 * LOOP_STRETCH_MS);
}

/**
 * Closes the current loop-probe window of process `pid` (`p` itself, or its sidecar child, both started
 * with ERNIE_EDGE_LOOP_PROBE=1) and returns it: SIGUSR2, then that process's next `loop probe` log line.
 */
export async function takeLoopWindow(p: CliProcess, pid: number): Promise<LoopProbeWindow> {
  const isProbe = (l: LogLine) => l.msg === 'loop probe' && l.pid === pid;
  const seen = p.logs.filter(isProbe).length;
  let k = 0;
  process.kill(pid, 'SIGUSR2');
  const line = await p.waitForLog((l) => isProbe(l) && ++k > seen);
  return line.loopProbe as LoopProbeWindow;
}
