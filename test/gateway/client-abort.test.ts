// A client that goes away (Stop click, client timeout) is recorded as 499 (nginx's convention), logged at
// info, and never counted as a server failure: no 5xx in http_requests_total, no error-level log line.
// Its engine request is still aborted (blocks freed). Through a real HTTP server, so the disconnect is
// the runtime's (@hono/node-server aborts the request's signal when the socket closes early).
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MODEL, setup } from './helpers.js';

interface Line {
  level: 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string | undefined;
}

let server: ServerType | null = null;
afterEach(async () => {
  const s = server;
  server = null;
  if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
});

async function start() {
  const lines: Line[] = [];
  let onLine: (() => void) | null = null;
  const log = (level: Line['level']) => (obj: object, msg?: string) => {
    lines.push({ level, obj: obj as Record<string, unknown>, msg });
    onLine?.();
  };
  const env = setup({ logger: { info: log('info'), warn: log('warn'), error: log('error') } });
  const base = await new Promise<string>((resolve) => {
    server = serve({ fetch: env.handle.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`));
  });
  /** Resolves once a request line for `route` has been logged (the record ended). */
  const requestLogged = (route: string) =>
    new Promise<Line>((resolve) => {
      const check = () => {
        const line = lines.find((l) => l.obj.route === route && typeof l.obj.status === 'number');
        if (line) resolve(line);
      };
      onLine = check;
      check();
    });
  return { ...env, base, lines, requestLogged };
}

const body = (extra: object) => JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50, ...extra });

describe('client abort', () => {
  it('non-streaming: 499 at info, no 5xx series, the engine request aborted', async () => {
    const env = await start();
    const release = env.engine.holdSteps();
    const ctl = new AbortController();
    const res = fetch(`${env.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body({}), signal: ctl.signal });
    await env.engine.whenActive(1);
    const logged = env.requestLogged('/v1/chat/completions');
    ctl.abort();
    await expect(res).rejects.toThrow();
    const line = await logged;
    release();
    expect(line.obj.status).toBe(499);
    expect(line.level).toBe('info');
    expect(env.lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(env.engine.abortedIds()).toEqual([env.engine.submitted[0]!.id]);
    const metrics = env.handle.metrics.render(null);
    expect(metrics).toMatch(/^http_requests_total\{[^}]*route="\/v1\/chat\/completions"[^}]*status="499"[^}]*\} 1$/m);
    expect(metrics).not.toMatch(/status="5\d\d"/);
  });

  it('streaming: a reader that stops mid-stream is a 499 too', async () => {
    const env = await start();
    const release = env.engine.holdSteps();
    const ctl = new AbortController();
    const res = await fetch(`${env.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body({ stream: true }), signal: ctl.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // the role chunk: the stream is under way
    const logged = env.requestLogged('/v1/chat/completions');
    ctl.abort();
    const line = await logged;
    release();
    expect(line.obj.status).toBe(499);
    expect(line.level).toBe('info');
    expect(env.lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(env.engine.abortedIds()).toEqual([env.engine.submitted[0]!.id]);
    expect(env.handle.metrics.render(null)).not.toMatch(/status="5\d\d"/);
  });
});
