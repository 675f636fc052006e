// Behind a load balancer: one engine sidecar on a Unix socket, 3 `--role gateway` gateways on loopback,
// nginx in front (as the current user, every path in a temp dir). 200 mixed streaming/non-streaming
// requests while one gateway is restarted (SIGTERM → drain → a new one on the same port): not one
// request may fail, and the draining gateway's /ready answers 503 while it still runs. The nginx config
// is the one documented in container/README.md (passive health + proxy_next_upstream, proxy_buffering
// off for SSE). Run twice: over processes (the fake engine), and once over containers of the CPU image
// (the real engine with the placeholder; ./gateway-fleet.ts) where podman or docker works. Skips,
// saying why, when nginx is not installed or no container engine works.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTempDirs, sseFrames, tempDir } from '../cli/process-helpers.js';
import { findEngine } from './container-engine.js';
import { freePorts, Proc, which } from './deploy-helpers.js';
import { containerFleet, processFleet, type Fleet } from './gateway-fleet.js';

const NGINX = which('nginx') ?? (existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : null);
if (!NGINX) console.warn('[nginx-rolling.e2e] skipped: nginx is not installed (CI: apt-get install -y nginx)');
const found = findEngine();
if (NGINX && 'reason' in found) console.warn(`[nginx-rolling.e2e] the run over containers is skipped: ${found.reason}`);
// The image container.e2e.test.ts builds (built here if that file has not run yet).
const IMAGE = process.env.ERNIE_EDGE_TEST_IMAGE ?? 'localhost/ernie-edge:e2e';
const CACHE = 'ernie-edge-lb-cache';

const TOTAL = 200;
const CONCURRENCY = 6;

function nginxConf(dir: string, listen: number, upstreams: number[]): string {
  // As root, workers would drop to `nobody` (who cannot write this temp dir): keep them as root.
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `${user}worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  log_format lb '$status $upstream_addr $upstream_status $request_uri';
  access_log ${dir}/access.log lb;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream gateways {
${upstreams.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=1s;`).join('\n')}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${listen};
    location / {
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_next_upstream_tries 3;
      proxy_connect_timeout 2s;
      proxy_read_timeout 60s;
    }
  }
}
`;
}

const fleets: Fleet[] = [];
let nginx: Proc | undefined;
afterAll(async () => {
  // nginx first (its own process group: master and workers), then the gateways and the sidecar.
  nginx?.kill('SIGKILL', true);
  await nginx?.exited;
  for (const f of fleets) await f.cleanup();
  if ('engine' in found) found.engine.try(['volume', 'rm', '-f', CACHE]);
  removeTempDirs();
});

const runs: [string, () => Fleet][] = [['processes', processFleet]];
if ('engine' in found) {
  const engine = found.engine;
  runs.push([`${engine.name} containers`, () => (engine.try(['volume', 'create', CACHE]), containerFleet(engine, IMAGE, CACHE))]);
}

async function waitReady(url: string, status: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = await fetch(url).then((r) => r.status, () => 0);
    if (s === status) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${url} never answered ${status}`);
}

/** One request through the balancer; returns null on success or what went wrong. */
async function one(base: string, i: number): Promise<string | null> {
  const stream = i % 2 === 0;
  const chat = i % 3 === 0;
  const body = chat
    ? { model: 'm', messages: [{ role: 'user', content: `hi ${i}` }], max_tokens: 8 + (i % 7), stream }
    : { model: 'm', prompt: `p${i}`, max_tokens: 8 + (i % 7), stream };
  Object.assign(body, { ignore_eos: true }); // the real engine (containers) may stop early otherwise
  try {
    const res = await fetch(`${base}/v1/${chat ? 'chat/completions' : 'completions'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) return `#${i}: HTTP ${res.status} ${await res.text()}`;
    if (!stream) {
      const j = (await res.json()) as { usage?: { completion_tokens: number } };
      return j.usage?.completion_tokens === body.max_tokens ? null : `#${i}: bad body ${JSON.stringify(j)}`;
    }
    const frames: string[] = [];
    for await (const f of sseFrames(res)) frames.push(f);
    if (frames.at(-1) !== '[DONE]') return `#${i}: stream ended without [DONE]`;
    if (frames.some((f) => f !== '[DONE]' && 'error' in (JSON.parse(f) as object))) return `#${i}: error event in stream`;
    return null;
  } catch (err) {
    return `#${i}: ${String(err)}`;
  }
}

describe.skipIf(!NGINX).each(runs)('3 gateways behind nginx, one restarted under load (%s)', (kind, makeFleet) => {
  it('serves 200 mixed requests with zero failures; the draining gateway reports 503 on /ready first', async () => {
    const dir = tempDir('ernie-lb-');
    const fleet = makeFleet();
    fleets.push(fleet);
    await fleet.startSidecar();

    const [lbPort, ...gwPorts] = await freePorts(4);
    const gateway = (port: number) => fleet.gateway(port);
    const gws = gwPorts.map(gateway);
    await Promise.all(gwPorts.map((p) => waitReady(`http://127.0.0.1:${p}/ready`, 200)));

    writeFileSync(path.join(dir, 'nginx.conf'), nginxConf(dir, lbPort!, gwPorts));
    nginx = new Proc(NGINX!, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log'), '-g', 'daemon off;'], { detached: true });
    const lb = `http://127.0.0.1:${lbPort}`;
    await waitReady(`${lb}/ready`, 200, 10_000);

    // The load: CONCURRENCY workers pulling request numbers until TOTAL were sent. The last TAIL
    // requests wait for the replacement to be ready and nginx's fail_timeout to pass (the restart's
    // length depends on the machine), so that it provably rejoins the rotation under load.
    let next = 0;
    let done = 0;
    let restarted = false;
    let releaseTail!: () => void;
    const tail = new Promise<void>((r) => (releaseTail = r));
    let quarterThrough!: () => void;
    const quarter = new Promise<void>((r) => (quarterThrough = r));
    const TAIL = 60;
    const failures: string[] = [];
    const workers = Array.from({ length: CONCURRENCY }, async () => {
      while (next < TOTAL) {
        if (next >= TOTAL - TAIL && !restarted) {
          await tail;
          continue;
        }
        const err = await one(lb, next++);
        if (++done >= TOTAL / 4) quarterThrough();
        if (err) failures.push(err);
      }
    });

    // The restart, once a quarter of the load is through.
    await quarter;
    const victim = gws[0]!;
    const victimUrl = `http://127.0.0.1:${gwPorts[0]}`;
    const startedAt = done;
    victim.stop();
    await waitReady(`${victimUrl}/ready`, 503, 5000);
    expect(victim.running()).toBe(true); // 503 observed while the gateway still runs
    expect(await victim.exited).toBe(0);
    const replacement = gateway(gwPorts[0]!);
    await waitReady(`${victimUrl}/ready`, 200);
    const restartedAt = done;
    // nginx keeps a peer that failed out of rotation for fail_timeout (1 s), then tries it again with
    // a live request: probe the balancer's /ready until one reaches the replacement (its own counter
    // says so). Probes are not /v1/ routes, so the access-log and byReplacement counts below skip them.
    const readyHits = async () =>
      [...(await (await fetch(`${victimUrl}/metrics`)).text()).matchAll(/http_requests_total\{[^}]*route="\/ready"[^}]*\} (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    const direct = await readyHits();
    await expect
      .poll(
        async () => {
          await fetch(`${lb}/ready`);
          return (await readyHits()) > direct;
        },
        { timeout: 30_000, interval: 100 },
      )
      .toBe(true);
    restarted = true;
    releaseTail();

    await Promise.all(workers);
    expect(failures).toEqual([]);
    expect(done).toBe(TOTAL);
    expect(restartedAt).toBeLessThanOrEqual(TOTAL - TAIL); // the restart happened under load, not after it
    expect(startedAt).toBeGreaterThan(0);

    // nginx's view: every request answered 200, and the replacement took traffic after the restart.
    // nginx writes a request's line after its last byte went out: the client may be done first.
    const logged = () => readFileSync(path.join(dir, 'access.log'), 'utf8').trim().split('\n').filter((l) => l.includes('/v1/'));
    await expect.poll(() => logged().length, { timeout: 5000, interval: 20 }).toBeGreaterThanOrEqual(TOTAL);
    const lines = logged();
    expect(lines).toHaveLength(TOTAL);
    expect(lines.every((l) => l.startsWith('200 '))).toBe(true);
    const served = (port: number) => lines.filter((l) => l.includes(`127.0.0.1:${port}`)).length;
    for (const p of gwPorts) expect(served(p)).toBeGreaterThan(0);
    const metrics = await (await fetch(`${victimUrl}/metrics`)).text();
    const byReplacement = [...metrics.matchAll(/http_requests_total\{[^}]*route="\/v1\/[^}]*\} (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    expect(byReplacement).toBeGreaterThan(0); // back in rotation once nginx's fail_timeout passed
    console.log(`[nginx-rolling.e2e] ${kind}: ${TOTAL} requests, 0 failed; restart between #${startedAt} and #${restartedAt}; retried by nginx: ${lines.filter((l) => l.includes(',')).length}; per gateway: ${gwPorts.map(served).join('/')} (replacement: ${byReplacement})`);

    replacement.stop();
    nginx.kill('SIGQUIT'); // graceful: the master stops its workers, then exits 0
    expect((await nginx.exited).code).toBe(0);
    nginx = undefined;
  }, 900_000);
});
