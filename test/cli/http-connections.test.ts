// src/cli/http-connections.ts through serveNode on a real loopback port, attacked with raw node:net
// sockets: silent and trickling connections (request-head timeout), idle keep-alive, pipelining floods,
// the open-connection cap. Timeouts are set small here; every wait is on a socket event or on the
// gateway's state. The same attacks against a whole `ernie-edge serve`: abuse-http.e2e.test.ts.
import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { serveNode, type NodeGateway } from '../../src/cli/node-server.js';
import type { ConnectionLimits } from '../../src/cli/http-connections.js';
import { createApp } from '../../src/gateway/app.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

const gateways: NodeGateway[] = [];
afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.shutdown();
});

/**
 * A gateway whose app counts the requests it is handed (`calls`) and the GET /metrics being answered at
 * once (`concurrent`, its peak `maxConcurrent`); `hold()` holds every GET /metrics until released.
 */
async function start(limits: Partial<ConnectionLimits>) {
  const engine = new FakeEngineClient();
  const handle = createApp({ engine });
  const app = handle.fetch;
  const seen = { calls: 0, concurrent: 0, maxConcurrent: 0 };
  let gate: Promise<void> | null = null;
  handle.fetch = async (req, env) => {
    seen.calls++;
    if (new URL(req.url).pathname !== '/metrics') return app(req, env);
    seen.concurrent++;
    seen.maxConcurrent = Math.max(seen.maxConcurrent, seen.concurrent);
    try {
      if (gate) await gate;
      return await app(req, env);
    } finally {
      seen.concurrent--;
    }
  };
  const gw = await serveNode({ handle, engine, listen: { host: '127.0.0.1', port: 0 }, drainTimeoutMs: 1000, limits });
  gateways.push(gw);
  const port = (gw.address as { port: number }).port;
  const hold = () => {
    let release!: () => void;
    gate = new Promise((r) => (release = r));
    return release;
  };
  return { gw, port, seen, hold };
}

/** Connects and collects what the server sends until it closes the connection. */
function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', () => undefined);
  const opened = performance.now();
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - opened)));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed, connected, received: () => received };
}

const GET = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

describe('gateway connection limits', () => {
  it('closes 50 connections that never send a byte with 408 after the request-head timeout', async () => {
    const { port, seen } = await start({ headersTimeoutMs: 300 });
    const conns = Array.from({ length: 50 }, () => connect(port));
    const lifetimes = await Promise.all(conns.map((c) => c.closed));
    for (const c of conns) expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(250);
    expect(Math.max(...lifetimes)).toBeLessThan(10_000); // Node's defaults would hold them 60–90 s
    expect(seen.calls).toBe(0);
  });

  it('closes a connection that trickles its request head a byte at a time', async () => {
    const { port } = await start({ headersTimeoutMs: 300 });
    const c = connect(port);
    await c.connected;
    const head = GET('/health');
    let i = 0;
    const trickle = setInterval(() => {
      if (!c.socket.destroyed && i < head.length - 2) c.socket.write(head[i++]!);
    }, 20);
    const lifetime = await c.closed;
    clearInterval(trickle);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(lifetime).toBeLessThan(10_000);
  });

  it('closes an idle kept-alive connection after --timeout-keep-alive', async () => {
    const { port } = await start({ keepAliveTimeoutMs: 200 });
    const c = connect(port);
    c.socket.write(GET('/health'));
    await vi.waitFor(() => expect(c.received()).toMatch(/"status":"ok"/));
    const lifetime = await c.closed;
    expect(lifetime).toBeGreaterThanOrEqual(200);
  });

  it('100,000 pipelined GET /metrics from a client that never reads: at most 4 are handled at once', async () => {
    const { gw, port, seen, hold } = await start({ maxPipelined: 4 });
    const release = hold();
    const c = connect(port);
    c.socket.pause(); // never reads
    c.socket.write(GET('/metrics').repeat(100_000));
    await vi.waitFor(() => expect(seen.concurrent).toBe(4));
    // Another client is served meanwhile.
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    expect(seen.maxConcurrent).toBe(4);
    expect(gw.inFlight).toBe(4);
    // The client leaves. The paused socket notices when the answers are written; then every request of
    // the connection ends, and the waiting ones are dropped unhandled.
    c.socket.destroy();
    release();
    await vi.waitFor(() => expect(gw.inFlight).toBe(0));
    expect(seen.calls).toBeLessThan(100);
  });

  it('a client that pipelines and reads gets every response, in order', async () => {
    const { port, seen } = await start({ maxPipelined: 2 });
    const c = connect(port);
    const paths = Array.from({ length: 20 }, (_, i) => (i % 2 ? '/health' : `/metrics?i=${i}`));
    c.socket.write(paths.map(GET).join(''));
    await vi.waitFor(() => expect(c.received().match(/HTTP\/1\.1 200 /g)?.length).toBe(20));
    expect(seen.maxConcurrent).toBeLessThanOrEqual(2);
    c.socket.destroy();
  });

  it('--limit-concurrency: a connection past the cap gets 503 and is closed; below it again, one is served', async () => {
    const { port } = await start({ maxConnections: 2 });
    const a = connect(port);
    const b = connect(port);
    await Promise.all([a.connected, b.connected]);
    const over = connect(port);
    await over.closed;
    expect(over.received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(over.received()).toMatch(/"code":"too_many_connections"/);
    a.socket.destroy();
    await a.closed;
    await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200));
    b.socket.destroy();
  });
});
