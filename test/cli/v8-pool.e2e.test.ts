// `serve`'s processes run with the V8 pool src/cli/v8-pool.ts sizes for this host: the sidecar child
// and cluster gateways get the flag on their command line; the process the user started re-executes
// itself with it where the runtime has process.execve (same pid). On Node versions that name their
// threads, the V8Worker threads are counted too: the flag must have reached V8. A size the user set in
// NODE_OPTIONS is left alone.
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { availableCores } from '../../src/cli/cpu-budget.js';
import { NODE_DEFAULT_POOL, servingPoolFlags, servingPoolSize } from '../../src/cli/v8-pool.js';
import { cleanUpProcesses, CliProcess, FAKE_BIN, fakeEnv, tempDir } from './process-helpers.js';

const procs: CliProcess[] = [];
afterEach(() => cleanUpProcesses(procs));

const hasExecve = typeof (process as unknown as { execve?: unknown }).execve === 'function';
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
const poolArgs = (pid: number) => cmdline(pid).filter((a) => a.startsWith('--v8-pool-size'));
const threadNames = (pid: number) => readdirSync(`/proc/${pid}/task`).map((t) => readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim());
/** The V8 pool's threads, where the runtime names them (Node 22+: "V8Worker"); null where it does not. */
function v8Workers(pid: number): number | null {
  const names = threadNames(pid);
  return names.includes('MainThread') ? names.filter((n) => n === 'V8Worker').length : null;
}
/** Child pids of `pid` (from /proc/N/stat's ppid field). */
function children(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return Number(readFileSync(`/proc/${d}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[1]) === pid;
      } catch {
        return false; // exited meanwhile
      }
    })
    .map(Number);
}

function serve(extra: string[], env: NodeJS.ProcessEnv = {}): CliProcess {
  const p = new CliProcess(['serve', '--port', '0', ...extra], { ...fakeEnv(tempDir('ernie-cache-')), ...env }, FAKE_BIN);
  procs.push(p);
  return p;
}

const cores = availableCores();
const flags = servingPoolFlags([], undefined, cores);
const size = servingPoolSize(cores);

describe(`serve V8 pool (${cores} cores here: ${flags.join(' ') || 'Node default'}; process.execve ${hasExecve ? 'present' : 'absent'})`, () => {
  it('sidecar, and the serve process where it can re-execute, run with the pool sized for this host', async () => {
    const p = serve([]);
    const ready = await p.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    const sidecar = Number(ready.sidecarPid);
    const top = p.child.pid!;
    expect(poolArgs(sidecar)).toEqual(flags);
    expect(poolArgs(top)).toEqual(hasExecve ? flags : []);
    expect(cmdline(top)).toContain('serve'); // the same command after the re-exec
    const [sw, tw] = [v8Workers(sidecar), v8Workers(top)];
    if (sw !== null) expect(sw).toBe(size);
    if (tw !== null) expect(tw).toBe(hasExecve ? size : NODE_DEFAULT_POOL);
    const base = await p.baseURL();
    expect((await fetch(`${base}/v1/models`)).status).toBe(200);
    p.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('cluster gateways get the flag; a size set in NODE_OPTIONS is kept everywhere', async () => {
    const p = serve(['--api-server-count', '2']);
    const ready = await p.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    const gateways = children(p.child.pid!).filter((c) => c !== Number(ready.sidecarPid));
    expect(gateways).toHaveLength(2);
    for (const g of gateways) expect(poolArgs(g)).toEqual(flags);

    const q = serve([], { NODE_OPTIONS: '--v8-pool-size=3' });
    const qReady = await q.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    for (const pid of [q.child.pid!, Number(qReady.sidecarPid)]) {
      expect(poolArgs(pid)).toEqual([]);
      const w = v8Workers(pid);
      if (w !== null) expect(w).toBe(3);
    }
  });
});
