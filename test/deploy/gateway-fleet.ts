// What the nginx rolling-restart test (nginx-rolling.e2e.test.ts) balances over: one engine sidecar on a
// Unix socket and gateways on loopback ports, either as processes (the fake engine) or as containers of
// the CPU image (ERNIE_EDGE_ROLE sidecar / gateway sharing the socket through a bind-mounted directory;
// the real engine with the placeholder model). Both are stopped the way their runtime stops them:
// SIGTERM to the process, `ENGINE stop` to the container (SIGTERM to its PID 1, the gateway).
import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import path from 'node:path';
import { CliProcess, FAKE_BIN, fakeEnv, tempDir } from '../cli/process-helpers.js';
import { ROOT, type Engine } from './container-engine.js';

export interface FleetGateway {
  /** SIGTERM: the gateway drains and exits. */
  stop(): void;
  running(): boolean;
  /** The exit code once stopped. */
  exited: Promise<number | null>;
}

export interface Fleet {
  kind: string;
  /** Starts the sidecar serving model `m`; resolves once it is ready. */
  startSidecar(): Promise<void>;
  gateway(port: number): FleetGateway;
  cleanup(): Promise<void>;
}

const GATEWAY_FLAGS = ['--drain-delay', '0.5', '--drain-timeout', '20', '--log-level', 'warn'];

export function processFleet(): Fleet {
  const dir = tempDir('ernie-lb-');
  const sock = path.join(dir, 'engine.sock');
  const procs: CliProcess[] = [];
  return {
    kind: 'processes',
    async startSidecar() {
      const sidecar = new CliProcess(['serve', '--role', 'sidecar', '--engine', `unix:${sock}`, '--served-model-name', 'm'], fakeEnv(tempDir('ernie-lb-cache-'), 8), FAKE_BIN);
      procs.push(sidecar);
      await sidecar.waitForLog((l) => l.msg === 'ready');
    },
    gateway(port) {
      const p = new CliProcess(['serve', '--role', 'gateway', '--engine', `unix:${sock}`, '--port', String(port), ...GATEWAY_FLAGS]);
      procs.push(p);
      return { stop: () => p.kill('SIGTERM'), running: () => p.child.exitCode === null && p.child.signalCode === null, exited: p.exited };
    },
    async cleanup() {
      for (const p of procs.splice(0).reverse()) {
        p.kill('SIGKILL');
        await p.exited;
      }
    },
  };
}

export function containerFleet(engine: Engine, image: string, cacheVolume: string): Fleet {
  const dir = tempDir('ernie-lb-sock-');
  chmodSync(dir, 0o777); // the image's user (uid 1000) creates the socket in it
  const names: string[] = [];
  let n = 0;
  const state = (name: string) => engine.try(['inspect', '--format', '{{.State.Status}}', name]).out.trim();
  const exitCode = (name: string): Promise<number | null> =>
    new Promise((resolve) => {
      const poll = () => {
        if (state(name) === 'running') return void setTimeout(poll, 100);
        const r = engine.try(['inspect', '--format', '{{.State.ExitCode}}', name]);
        resolve(r.code === 0 ? Number(r.out.trim()) : null); // null: removed meanwhile (cleanup)
      };
      poll();
    });
  const run = (name: string, args: string[]) => {
    names.push(name);
    engine.try(['rm', '-f', '-t', '0', name]);
    engine.run(['run', '-d', '--name', name, '-v', `${dir}:/run/ernie`, ...args]);
  };
  return {
    kind: `${engine.name} containers`,
    async startSidecar() {
      if (engine.try(['image', 'inspect', image]).code !== 0) {
        // Not built yet by container.e2e.test.ts (files may run in any order).
        const r = spawnSync('bash', [path.join(ROOT, 'container/ci/build-image.sh'), engine.name, image], { encoding: 'utf8', timeout: 1_500_000 });
        if (r.status !== 0) throw new Error(`build failed:\n${(r.stderr ?? '').slice(-4000)}`);
      }
      run('ernie-edge-lb-engine', ['-e', 'ERNIE_EDGE_ROLE=sidecar', '-v', `${cacheVolume}:/home/node/.cache/ernie-edge`, image, '--engine', 'unix:/run/ernie/engine.sock', '--served-model-name', 'm']);
      const deadline = Date.now() + 600_000;
      while (engine.try(['exec', 'ernie-edge-lb-engine', 'node', '/app/container/healthcheck.mjs']).code !== 0) {
        if (Date.now() > deadline || state('ernie-edge-lb-engine') !== 'running') throw new Error(`the engine container is not ready:\n${engine.try(['logs', '--tail', '20', 'ernie-edge-lb-engine']).out}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    },
    gateway(port) {
      const name = `ernie-edge-lb-gateway-${n++}`;
      run(name, ['-e', 'ERNIE_EDGE_ROLE=gateway', '-p', `127.0.0.1:${port}:8000`, image, '--engine', 'unix:/run/ernie/engine.sock', ...GATEWAY_FLAGS]);
      let exited: Promise<number | null> | null = null;
      const g: FleetGateway = {
        stop: () => {
          engine.run(['kill', '--signal', 'TERM', name]); // what `stop` sends first, without blocking on the drain
          exited = exitCode(name);
        },
        running: () => state(name) === 'running',
        get exited() {
          return exited ?? exitCode(name);
        },
      };
      return g;
    },
    async cleanup() {
      for (const name of names.splice(0).reverse()) engine.try(['rm', '-f', '-t', '0', name]);
    },
  };
}
