// What a real `ernie-edge serve` (fake native engine) leaves behind and shows: its temp directory after
// SIGKILL (removed by the next start), the sidecar child's environment (/proc/PID/environ: no API key or
// other secret) and the open routes while the engine is down (no socket or model path).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUpProcesses, CliProcess, FAKE_BIN, fakeEnv, tempDir } from './process-helpers.js';

const procs: CliProcess[] = [];
afterEach(() => cleanUpProcesses(procs));

function serve(env: NodeJS.ProcessEnv, extra: string[] = []): CliProcess {
  const p = new CliProcess(['serve', '--port', '0', ...extra], { ...fakeEnv(tempDir('ernie-cache-')), ...env }, FAKE_BIN);
  procs.push(p);
  return p;
}

const runDirs = (tmp: string) => readdirSync(tmp).filter((n) => n.startsWith('ernie-edge-'));

describe('ernie-edge serve hygiene (fake engine)', () => {
  it('a SIGKILLed serve leaves its temp directory; the next serve removes it, and its own on exit', async () => {
    const tmp = tempDir('ernie-tmp-');
    const first = serve({ TMPDIR: tmp });
    await first.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    const [left] = runDirs(tmp);
    expect(existsSync(path.join(tmp, left!, 'engine.sock'))).toBe(true);
    first.kill('SIGKILL');
    await first.exited;
    expect(runDirs(tmp)).toEqual([left]); // SIGKILL: nothing could remove it

    const second = serve({ TMPDIR: tmp });
    await second.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    expect(second.logs.some((l) => l.msg === 'removed run directories left by dead serve processes' && l.removed === 1)).toBe(true);
    const now = runDirs(tmp);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(left);
    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(runDirs(tmp)).toEqual([]);
  });

  it('the sidecar child gets no API key or other secret; the gateway still requires the key', async () => {
    const p = serve({ ERNIE_EDGE_API_KEY: 'sk-abuse', HF_TOKEN: 'hf_abuse', MY_SERVICE_PASSWORD: 'pw' });
    const ready = await p.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    const environ = readFileSync(`/proc/${Number(ready.sidecarPid)}/environ`, 'utf8').split('\0');
    expect(environ.filter((kv) => /^(ERNIE_EDGE_API_KEY|HF_TOKEN|MY_SERVICE_PASSWORD)=/.test(kv))).toEqual([]);
    expect(environ.some((kv) => kv.startsWith('ERNIE_EDGE_CACHE='))).toBe(true);
    const base = await p.baseURL();
    expect((await fetch(`${base}/v1/models`)).status).toBe(401);
    expect((await fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer sk-abuse' } })).status).toBe(200);
  });

  it('/ready and /metrics show no socket or model path while the engine is down', async () => {
    // A gateway alone, its sidecar's socket absent: the engine client's error names the socket path.
    const sock = path.join(tempDir('ernie-secret-dir-'), 'engine.sock');
    const p = new CliProcess(['serve', '--role', 'gateway', '--port', '0', '--engine', `unix:${sock}`, '--served-model-name', '/srv/models/secret-project/ernie']);
    procs.push(p);
    const base = await p.baseURL();
    const res = await fetch(`${base}/ready`);
    expect(res.status).toBe(503);
    const ready = (await res.json()) as { status: string; message: string };
    expect(ready.status).toBe('engine unavailable');
    expect(ready.message).toContain('<path>');
    expect(JSON.stringify(ready)).not.toContain('ernie-secret-dir');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('vllm:engine_up{model_name="ernie"} 0');
    expect(metrics).not.toContain('/srv');
  });
});
