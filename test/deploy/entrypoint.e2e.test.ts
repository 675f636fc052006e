// container/entrypoint.sh run directly (no Docker engine here): in `all` mode it starts the sidecar and
// the gateway, a SIGTERM drains the gateway (an open stream still completes) and then stops the
// sidecar, and the script exits 0 with both processes gone and its socket directory removed; a
// sidecar dying on its own takes the pair down with a non-zero exit. Plus shellcheck where installed.
import { spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { FAKE_BIN, fakeEnv, pollStatus, removeTempDirs, sseFrames, tempDir } from '../cli/process-helpers.js';
import { freePorts, Proc, which } from './deploy-helpers.js';

const SCRIPT = fileURLToPath(new URL('../../container/entrypoint.sh', import.meta.url));
const procs: Proc[] = [];
afterAll(async () => {
  for (const p of procs) {
    p.kill('SIGKILL', true);
    await p.exited;
  }
  removeTempDirs();
});

async function start(stepMs: number, extra: string[] = []) {
  const [port] = await freePorts(1);
  const tmp = tempDir('ernie-entry-');
  const p = new Proc('bash', [SCRIPT, '--drain-delay', '0.3', ...extra], {
    detached: true, // own process group: the afterAll SIGKILL reaches the children too
    env: { ...process.env, ...fakeEnv(tempDir('ernie-entry-cache-'), stepMs), ERNIE_EDGE_BIN: FAKE_BIN, ERNIE_EDGE_HOST: '127.0.0.1', ERNIE_EDGE_PORT: String(port), TMPDIR: tmp, ERNIE_EDGE_MODEL: '' },
  });
  procs.push(p);
  const m = await p.waitFor(/sidecar pid (\d+), gateway pid (\d+), socket (\S+)/);
  return { p, tmp, base: `http://127.0.0.1:${port}`, sidecar: Number(m[1]), gateway: Number(m[2]), sock: m[3]! };
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('container/entrypoint.sh', () => {
  it('starts both, forwards SIGTERM (gateway drains first, then the sidecar) and exits 0', async () => {
    const { p, tmp, base, sidecar, gateway, sock } = await start(10);
    expect(sock.startsWith(tmp)).toBe(true);
    await pollStatus(`${base}/ready`, 200);
    expect(alive(sidecar) && alive(gateway)).toBe(true);
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'ernie-edge-default', prompt: 'Hi', max_tokens: 60, ignore_eos: true, stream: true }),
    });
    const frames = sseFrames(res);
    expect((await frames.next()).done).toBe(false); // the stream is running
    p.kill('SIGTERM'); // the script only, as a container runtime would signal PID 1
    await pollStatus(`${base}/ready`, 503, 5000); // draining
    const rest: string[] = [];
    for await (const f of frames) rest.push(f);
    expect(rest.at(-1)).toBe('[DONE]'); // the in-flight stream finished during the drain
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(alive(sidecar) || alive(gateway)).toBe(false);
    expect(readdirSync(tmp).filter((n) => n.startsWith('ernie-edge.'))).toEqual([]); // the 0700 socket directory is gone
    expect(p.out).toMatch(/gateway exited 0, sidecar exited 0/);
  });

  it('a sidecar that dies on its own stops the gateway and exits non-zero', async () => {
    const { p, base, sidecar, gateway } = await start(0);
    await pollStatus(`${base}/ready`, 200);
    process.kill(sidecar, 'SIGKILL');
    const { code } = await p.exited;
    expect(code).not.toBe(0);
    expect(alive(gateway)).toBe(false);
    expect(p.out).toContain('the sidecar exited (137) on its own');
  });

  // The argv a role is exec'd with, seen through a stand-in for bin/ernie-edge.js that prints it.
  const argvOf = (env: Record<string, string>, args: string[] = []): string[] => {
    const bin = `${tempDir('ernie-entry-argv-')}/print-argv.mjs`;
    writeFileSync(bin, 'console.log(JSON.stringify(process.argv.slice(2)));\n');
    const r = spawnSync('bash', [SCRIPT, ...args], { env: { ...process.env, ERNIE_EDGE_ROLE: 'sidecar', ERNIE_EDGE_BIN: bin, ERNIE_EDGE_SERVED_MODEL_NAME: '', ERNIE_EDGE_THREADS: '', ...env }, encoding: 'utf8' });
    expect(r.status).toBe(0);
    return JSON.parse(r.stdout) as string[];
  };

  it('passes the model once: a --model argument wins over ERNIE_EDGE_MODEL (no "--model was given twice")', () => {
    expect(argvOf({ ERNIE_EDGE_MODEL: '/m' })).toEqual(['serve', '--role', 'sidecar', '--model', '/m']);
    for (const args of [['--model', '/arg'], ['--model=/arg'], ['--max-model-len', '64', '--model', '/arg']]) {
      expect(argvOf({ ERNIE_EDGE_MODEL: '/m' }, args)).toEqual(['serve', '--role', 'sidecar', ...args]);
    }
    expect(argvOf({ ERNIE_EDGE_MODEL: '/m' }, ['--max-model-len', '64'])).toEqual(['serve', '--role', 'sidecar', '--model', '/m', '--max-model-len', '64']);
  });

  it('serves a mounted model under ERNIE_EDGE_SERVED_MODEL_NAME unless --served-model-name is given; the placeholder keeps its name', () => {
    const named = { ERNIE_EDGE_MODEL: '/m', ERNIE_EDGE_SERVED_MODEL_NAME: 'baidu/ERNIE-4.5-0.3B-PT' };
    expect(argvOf(named)).toEqual(['serve', '--role', 'sidecar', '--model', '/m', '--served-model-name', 'baidu/ERNIE-4.5-0.3B-PT']);
    expect(argvOf(named, ['--served-model-name', 'x'])).toEqual(['serve', '--role', 'sidecar', '--model', '/m', '--served-model-name', 'x']);
    expect(argvOf(named, ['--served_model_name=x'])).toEqual(['serve', '--role', 'sidecar', '--model', '/m', '--served_model_name=x']);
    expect(argvOf({ ERNIE_EDGE_MODEL: '', ERNIE_EDGE_SERVED_MODEL_NAME: 'baidu/ERNIE-4.5-0.3B-PT' })).toEqual(['serve', '--role', 'sidecar']);
  });

  it('gives the sidecar --threads ERNIE_EDGE_THREADS (the manifests: the CPU limit) unless --threads is given', () => {
    expect(argvOf({ ERNIE_EDGE_THREADS: '4' })).toEqual(['serve', '--role', 'sidecar', '--threads', '4']);
    expect(argvOf({ ERNIE_EDGE_THREADS: '4' }, ['--threads', '2'])).toEqual(['serve', '--role', 'sidecar', '--threads', '2']);
    expect(argvOf({ ERNIE_EDGE_THREADS: '' })).toEqual(['serve', '--role', 'sidecar']);
  });

  it('rejects an unknown role', () => {
    const r = spawnSync('bash', [SCRIPT], { env: { ...process.env, ERNIE_EDGE_ROLE: 'both' }, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('ERNIE_EDGE_ROLE must be all, gateway or sidecar');
  });

  const shellcheck = which('shellcheck');
  if (!shellcheck) console.warn('[entrypoint.e2e] shellcheck test skipped: shellcheck is not installed (CI: apt-get install -y shellcheck)');
  it.skipIf(!shellcheck)('passes shellcheck', () => {
    const r = spawnSync(shellcheck!, ['--shell=bash', '--severity=style', SCRIPT], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
