// Shared by the deploy suites: a fake-engine sidecar on an ephemeral TCP port, free loopback ports,
// and spawning other programs (wrangler, nginx, the entrypoint) with cleanup by pid.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import net from 'node:net';
import { CliProcess, FAKE_BIN, fakeEnv, tempDir } from '../cli/process-helpers.js';

export const SECRET = 'deploy-test-secret';

/** `serve --role sidecar` (fake engine) on tcp://127.0.0.1:0; resolves once the model is "loaded". */
export async function startTcpSidecar(stepMs = 2, extra: string[] = []): Promise<{ proc: CliProcess; engine: string }> {
  const proc = new CliProcess(
    ['serve', '--role', 'sidecar', '--engine', 'tcp://127.0.0.1:0', '--served-model-name', 'm', ...extra],
    { ...fakeEnv(tempDir('ernie-deploy-cache-'), stepMs), ERNIE_EDGE_ENGINE_SECRET: SECRET },
    FAKE_BIN,
  );
  const listening = await proc.waitForLog((l) => l.msg?.startsWith('engine protocol listening') === true);
  await proc.waitForLog((l) => l.msg === 'ready');
  const a = listening.address as { host: string; port: number };
  return { proc, engine: `tcp://127.0.0.1:${a.port}` };
}

/** Ports the OS considers free right now (bound to 0, then released) for programs that need them up front. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<net.Server>((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export function which(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** A spawned program with its output collected; waitFor() resolves on the first output matching re. */
export class Proc {
  readonly child: ChildProcess;
  out = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];

  constructor(cmd: string, args: string[], opts: SpawnOptions = {}) {
    this.child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    const onData = (d: Buffer) => {
      this.out += d.toString();
      this.waiters = this.waiters.filter((w) => {
        const m = this.out.match(w.re);
        if (m) w.resolve(m);
        return !m;
      });
    };
    this.child.stdout!.on('data', onData);
    this.child.stderr!.on('data', onData);
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  waitFor(re: RegExp): Promise<RegExpMatchArray> {
    const m = this.out.match(re);
    if (m) return Promise.resolve(m);
    return Promise.race([
      new Promise<RegExpMatchArray>((resolve) => this.waiters.push({ re, resolve })),
      this.exited.then((e) => {
        throw new Error(`exited (${e.code ?? e.signal}) before ${re}; output:\n${this.out.slice(-3000)}`);
      }),
    ]);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Signals the process if it still runs; with `group` (spawned detached) its whole process group,
   * even after the leader exited: children it left behind (nginx workers, a sidecar) are reached too.
   */
  kill(signal: NodeJS.Signals = 'SIGTERM', group = false): void {
    if (this.child.pid === undefined || (!group && !this.running)) return;
    try {
      process.kill(group ? -this.child.pid : this.child.pid, signal);
    } catch {
      /* already gone (ESRCH) */
    }
  }
}
