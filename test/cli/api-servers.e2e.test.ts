// `serve --api-server-count 3` as a real process tree (the fake native engine, test/doubles/fake-bin.js):
// three gateway processes on one port in front of one sidecar. Connections land on more than one of
// them (each names itself in the x-ernie-edge-api-server header); /metrics, whichever process answers,
// counts every process's requests once; a gateway killed with SIGKILL is restarted while the others
// serve, and the new one serves; SIGTERM drains every gateway with a stream in flight, then exits 0.
// Every gateway process warms its own request path (src/cli/http-warm-up.ts), the restarted one too.
import { get, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { runtimeHasReusePort } from '../../src/cli/cluster.js';
import { cleanUpProcesses, CliProcess, FAKE_BIN, fakeEnv, type LogLine, pollStatus, sseFrames, tempDir } from './process-helpers.js';

const procs: CliProcess[] = [];
afterEach(() => cleanUpProcesses(procs));

const HEADER = 'x-ernie-edge-api-server';

/** GET on a connection of its own (agent: false), so each request is one new connection to spread. */
function getFresh(url: string): Promise<{ status: number; server: string; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, server: String(res.headers[HEADER]), body }));
    }).on('error', reject);
  });
}

/** The summed value of http_requests_total for GET /v1/models answered 200. */
const modelsCount = (metrics: string) => Number(/^http_requests_total\{method="GET",route="\/v1\/models",status="200"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);

const listening = (slot: number) => (l: LogLine) => l.msg === 'gateway listening' && l.apiServer === slot;
const warmed = (slot: number, pid?: number) => (l: LogLine) => l.msg?.startsWith('gateway warm-up done') === true && l.apiServer === slot && (pid === undefined || Number(l.pid) === pid);

describe('serve --api-server-count 3 (fake engine)', () => {
  it('spreads connections, sums /metrics, restarts a killed gateway while the others serve, drains on SIGTERM', async () => {
    const p = new CliProcess(['serve', '--port', '0', '--api-server-count', '3', '--drain-timeout', '20', '--api-server-warmup-requests', '5'], fakeEnv(tempDir('ernie-cache-'), 15), FAKE_BIN);
    procs.push(p);
    await p.waitForLog((l) => l.msg === 'ready: OpenAI-compatible API');
    const base = await p.baseURL();
    await pollStatus(`${base}/ready`, 200);
    const up = await p.waitForLog((l) => l.msg === 'gateway processes listening');
    expect(up.balancing).toBe(runtimeHasReusePort() ? 'SO_REUSEPORT' : 'round-robin'); // this Node's way
    const pids = await Promise.all([1, 2, 3].map(async (s) => Number((await p.waitForLog(listening(s))).pid)));
    expect(new Set(pids).size).toBe(3);
    // Each sent its requests, or as many as its time budget allowed on a loaded host.
    for (const s of [1, 2, 3]) expect((await p.waitForLog(warmed(s))).warmUpRequests).toBeGreaterThan(0);

    // Spread: 12 connections, each answered 200, by more than one process.
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(await getFresh(`${base}/v1/models`));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.server)).size).toBeGreaterThan(1);
    expect(answers.every((a) => ['1', '2', '3'].includes(a.server))).toBe(true);

    // Metrics: a scrape on any process counts all 12, once each (observations reach the summing
    // registry over IPC, asynchronously: poll until they are in, then the count is exact).
    let count = 0;
    for (let i = 0; i < 200 && count < 12; i++) count = modelsCount((await getFresh(`${base}/metrics`)).body);
    expect(count).toBe(12);
    const scrapes = await Promise.all(Array.from({ length: 12 }, () => getFresh(`${base}/metrics`)));
    expect(new Set(scrapes.map((s) => s.server)).size).toBeGreaterThan(1);
    for (const s of scrapes) expect(modelsCount(s.body)).toBe(12);
    expect(scrapes[0]!.body).toMatch(/^vllm:num_requests_running\{model_name="ernie-edge-default"\} \d+$/m); // engine series: the sidecar's, once

    // SIGKILL gateway 2: the others serve while it restarts, then a new process serves in its slot.
    process.kill(pids[1]!, 'SIGKILL');
    await p.waitForLog((l) => l.msg === 'gateway process died: restarting it' && l.apiServer === 2);
    let restarted: LogLine | undefined;
    void p.waitForLog((l) => l.msg === 'gateway process restarted' && l.apiServer === 2).then((l) => (restarted = l));
    const during: { status: number; server: string }[] = [];
    while (!restarted) during.push(await getFresh(`${base}/v1/models`));
    // Every request answered; those before the new process listened, by the two others (the new one
    // may already answer a last few: it listens before the primary logs its restart).
    expect(during.map((a) => a.status)).toEqual(during.map(() => 200));
    expect(during.filter((a) => a.server !== '2').length).toBeGreaterThan(0);
    const newPid = Number((await p.waitForLog((l) => listening(2)(l) && l.pid !== pids[1])).pid);
    expect(newPid).not.toBe(pids[1]);
    expect((await p.waitForLog(warmed(2, newPid))).warmUpRequests).toBeGreaterThan(0);
    let servedBy2 = false;
    for (let i = 0; i < 60 && !servedBy2; i++) servedBy2 = (await getFresh(`${base}/v1/models`)).server === '2';
    expect(servedBy2).toBe(true); // the old process is dead: this is the new one

    // SIGTERM with a stream in flight: it completes, every gateway drains, the tree exits 0.
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'ernie-edge-default', prompt: 'Hi', max_tokens: 60, ignore_eos: true, stream: true }),
    });
    expect(res.status).toBe(200);
    const frames = sseFrames(res);
    expect((await frames.next()).done).toBe(false);
    p.kill('SIGTERM');
    const rest: string[] = [];
    for await (const f of frames) rest.push(f);
    expect(rest.at(-1)).toBe('[DONE]');
    expect((JSON.parse(rest.at(-2)!) as { choices: { finish_reason: string }[] }).choices[0]!.finish_reason).toBe('length');
    expect(await p.closed).toBe(0);
    const drained = new Set(p.logs.filter((l) => l.msg === 'gateway drained').map((l) => Number(l.pid)));
    for (const pid of [pids[0]!, newPid, pids[2]!]) expect(drained.has(pid)).toBe(true);
  });
});
