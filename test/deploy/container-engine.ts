// The container engine the image tests drive: podman or docker, whichever works here (a daemon that
// answers, storage that can be used), or the reason there is none. ERNIE_EDGE_CONTAINER_ENGINE picks
// one (podman, docker) or none.
// Commands run synchronously with their output captured; `run` throws with the output on failure.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Engine {
  name: 'podman' | 'docker';
  /** Runs `ENGINE ...args`; throws with its output unless it exits 0. Returns stdout, trimmed. */
  run(args: string[], opts?: { timeoutMs?: number; allowFail?: boolean }): string;
  /** Exit code and output of `ENGINE ...args`, never throwing. */
  try(args: string[], timeoutMs?: number): { code: number | null; out: string };
}

function engine(name: 'podman' | 'docker'): Engine {
  const exec = (args: string[], timeoutMs = 600_000) => {
    const r = spawnSync(name, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 << 20 });
    return { code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: (r.stdout ?? '').trim(), error: r.error };
  };
  return {
    name,
    run(args, opts = {}) {
      const r = exec(args, opts.timeoutMs);
      if (r.code !== 0 && !opts.allowFail) throw new Error(`${name} ${args.join(' ')} → ${r.code ?? r.error}\n${r.out.slice(-4000)}`);
      return r.stdout;
    },
    try(args, timeoutMs) {
      const r = exec(args, timeoutMs);
      return { code: r.code, out: r.out };
    },
  };
}

/** The working engine, or why there is none. */
export function findEngine(env: NodeJS.ProcessEnv = process.env): { engine: Engine } | { reason: string } {
  const wanted = env.ERNIE_EDGE_CONTAINER_ENGINE;
  if (wanted === 'none') return { reason: 'ERNIE_EDGE_CONTAINER_ENGINE=none' };
  const names: ('podman' | 'docker')[] = wanted === 'podman' || wanted === 'docker' ? [wanted] : ['podman', 'docker'];
  const why: string[] = [];
  for (const name of names) {
    const r = spawnSync(name, ['info'], { encoding: 'utf8', timeout: 60_000 });
    if (r.status === 0) return { engine: engine(name) };
    why.push(r.error ? `${name}: not installed` : `${name} info failed: ${(r.stderr || r.stdout).trim().split('\n').at(-1)}`);
  }
  return { reason: `${why.join('; ')} (CI: bash container/ci/prepare-podman.sh)` };
}
