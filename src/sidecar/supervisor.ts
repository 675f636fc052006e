// Runs the sidecar as a child process of `ernie-edge serve` and keeps it running.
//
// Policy (decided for issue 5): the first start must succeed — a child that exits before reporting
// ready (bad --model, port in use …) fails start() and `serve` exits non-zero with the child's error
// on the log. After that, an unexpected exit (crash, OOM kill, kill -9) is logged loudly and the child
// is restarted with exponential backoff (0.5 s doubling to 10 s, reset once a child is ready again),
// like a container restart policy; meanwhile the gateway stays up, open streams end with an error
// event and /ready answers 503 until the new child has loaded.
//
// The child gets an IPC channel: it sends {type: 'ready'} once serving and exits when the channel
// closes (so it never outlives a SIGKILLed parent). It runs in its own process group (detached), so a
// terminal's Ctrl-C reaches only the parent, which drains the gateway first and then stops the child.

import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from '../protocol/logger.js';

export interface SupervisorOptions {
  command: string; // process.execPath
  args: string[];
  env: NodeJS.ProcessEnv;
  logger: Logger;
  backoff?: { initialMs: number; maxMs: number };
}

export class SidecarSupervisor {
  private child: ChildProcess | null = null;
  private stopping = false;
  private everReady = false;
  private delay: number;
  private restartTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly backoff: { initialMs: number; maxMs: number };
  private exited: Promise<void> = Promise.resolve();
  /** Number of children started (1 + restarts). */
  starts = 0;

  constructor(private readonly opts: SupervisorOptions) {
    this.backoff = opts.backoff ?? { initialMs: 500, maxMs: 10_000 };
    this.delay = this.backoff.initialMs;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the first child; resolves when it reports ready, rejects if it exits before. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => this.spawnChild(resolve, reject));
  }

  /** SIGTERM to the child (it drains), SIGKILL after timeoutMs; resolves once it has exited. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  private spawnChild(onReady?: () => void, onEarlyExit?: (err: Error) => void): void {
    const { logger } = this.opts;
    this.starts++;
    const child = spawn(this.opts.command, this.opts.args, {
      env: this.opts.env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      detached: true,
    });
    this.child = child;
    let ready = false;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.on('message', (m: unknown) => {
      if ((m as { type?: unknown } | null)?.type !== 'ready') return;
      ready = true;
      this.everReady = true;
      this.delay = this.backoff.initialMs;
      logger.info({ sidecarPid: child.pid, starts: this.starts }, 'sidecar ready');
      onReady?.();
    });
    child.once('error', (err) => logger.error({ err: err.message }, 'sidecar process error'));
    child.once('exit', (code, signal) => {
      if (this.stopping) return;
      if (!this.everReady && !ready) {
        onEarlyExit?.(new Error(`the sidecar exited during start-up (code ${code}, signal ${signal}); see its log above`));
        return;
      }
      logger.error({ sidecarPid: child.pid, code, signal, restartInMs: this.delay }, 'SIDECAR DIED: open streams ended with an error; restarting it');
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        if (!this.stopping) this.spawnChild();
      }, this.delay);
      this.delay = Math.min(this.delay * 2, this.backoff.maxMs);
    });
    logger.info({ sidecarPid: child.pid }, 'sidecar started');
  }
}
