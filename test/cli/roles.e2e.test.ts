// The two halves run alone (`--role gateway` and `--role sidecar` over a Unix socket), and start-up
// failures: the gateway is up and not ready without a sidecar, kill -9 of the sidecar mid-stream ends
// the stream with an error event and /ready turns 503, and a new sidecar brings it back.
import { statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUpProcesses, CliProcess, FAKE_BIN, fakeEnv, pollStatus, sseFrames, tempDir } from './process-helpers.js';

const procs: CliProcess[] = [];
afterEach(() => cleanUpProcesses(procs));
const run = (args: string[], env: NodeJS.ProcessEnv = {}, bin?: string) => {
  const p = new CliProcess(args, env, bin);
  procs.push(p);
  return p;
};

describe('--role gateway / --role sidecar', () => {
  it('recovers from a sidecar killed mid-stream once a new one listens on the socket', async () => {
    const dir = tempDir('ernie-roles-');
    const sock = path.join(dir, 'engine.sock');
    const env = fakeEnv(tempDir('ernie-cache-'), 20);
    const gw = run(['serve', '--role', 'gateway', '--engine', `unix:${sock}`, '--port', '0']);
    const base = await gw.baseURL();
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/ready`)).status).toBe(503);

    const sidecarArgs = ['serve', '--role', 'sidecar', '--engine', `unix:${sock}`, '--served-model-name', 'm'];
    const sc1 = run(sidecarArgs, env, FAKE_BIN);
    await sc1.waitForLog((l) => l.msg === 'ready');
    expect(statSync(sock).mode & 0o777).toBe(0o600);
    await pollStatus(`${base}/ready`, 200);

    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'Hi', max_tokens: 500, ignore_eos: true, stream: true }),
    });
    const frames = sseFrames(res);
    expect((await frames.next()).done).toBe(false);
    sc1.kill('SIGKILL');
    const rest: string[] = [];
    for await (const f of frames) rest.push(f);
    expect(rest.some((f) => f !== '[DONE]' && 'error' in (JSON.parse(f) as object))).toBe(true);
    expect((await fetch(`${base}/ready`)).status).toBe(503);
    expect((await fetch(`${base}/health`)).status).toBe(200);

    const sc2 = run(sidecarArgs, env, FAKE_BIN); // clears the dead sidecar's stale socket file
    await sc2.waitForLog((l) => l.msg === 'ready');
    await pollStatus(`${base}/ready`, 200);
    const ok = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'Hi', max_tokens: 2 }),
    });
    expect(ok.status).toBe(200);
    sc2.kill('SIGTERM');
    gw.kill('SIGTERM');
    expect(await sc2.exited).toBe(0);
    expect(await gw.exited).toBe(0);
  });
});

describe('model resolution errors', () => {
  it('a repo id missing from the HF cache names what to download, and serve exits 1', async () => {
    const p = run(['serve', '--model', 'baidu/Not-Downloaded', '--port', '0'], { HF_HOME: tempDir('ernie-hf-'), HF_HUB_CACHE: '' });
    expect(await p.closed).toBe(1);
    const line = p.logs.find((l) => l.level === 50);
    expect(String(line?.msg)).toMatch(/not in the local Hugging Face cache.*huggingface-cli download baidu\/Not-Downloaded/);
  });

  it('a sidecar with a missing model directory exits 1 with the reason', async () => {
    const sock = path.join(tempDir('ernie-roles-'), 'e.sock');
    const p = run(['serve', '--role', 'sidecar', '--engine', `unix:${sock}`, '--model', '/nonexistent/model/dir'], fakeEnv(tempDir('ernie-cache-')), FAKE_BIN);
    expect(await p.closed).toBe(1);
    expect(p.logs.some((l) => /\/nonexistent\/model\/dir: no such directory/.test(String(l.err ?? l.msg)))).toBe(true);
  });

  it('usage errors exit 2 with one clear line', async () => {
    const p = run(['serve', '--max-model-lne', '5']);
    expect(await p.exited).toBe(2);
    expect(p.stderr).toBe('ernie-edge: unknown option --max-model-lne (did you mean --max-model-len?) (see --help)\n');
  });
});
