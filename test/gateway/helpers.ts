// Shared helpers for gateway tests: an app over the fake engine, JSON/SSE request helpers.
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect } from 'vitest';
import { createApp, type AppHandle, type CreateAppOptions } from '../../src/gateway/app.js';
import { FakeEngineClient, type FakeEngineClientOptions } from '../doubles/fake-engine-client.js';

export const MODEL = 'baidu/ERNIE-4.5-0.3B-PT';

export function setup(opts: Partial<CreateAppOptions> = {}, engineOpts: FakeEngineClientOptions = {}) {
  const engine = new FakeEngineClient(engineOpts);
  const handle = createApp({ engine, ...opts });
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<Response> =>
    handle.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' || body instanceof Uint8Array ? (body as BodyInit) : JSON.stringify(body),
      ...init,
    });
  const get = async (path: string, headers: Record<string, string> = {}): Promise<Response> => handle.app.request(path, { headers });
  return { engine, handle, post, get };
}

export interface SSEResult {
  events: unknown[];
  done: boolean;
  raw: string;
}

/** Parses `data: …\n\n` frames; checks the framing strictly and that [DONE] is last. */
export function parseSSE(raw: string): SSEResult {
  const frames = raw.split('\n\n');
  expect(frames.pop()).toBe(''); // ends with a blank line
  const events: unknown[] = [];
  let done = false;
  for (const f of frames) {
    expect(f.startsWith('data: ')).toBe(true);
    const data = f.slice('data: '.length);
    expect(done).toBe(false); // nothing after [DONE]
    if (data === '[DONE]') done = true;
    else events.push(JSON.parse(data));
  }
  return { events, done, raw };
}

export async function sse(res: Response): Promise<SSEResult> {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  return parseSSE(await res.text());
}

/** Asserts the OpenAI error envelope and returns it. */
export async function expectError(res: Response, status: number) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string | null } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(typeof body.error.type).toBe('string');
  expect(body.error.param === null || typeof body.error.param === 'string').toBe(true);
  return body.error;
}

export const sortedKeys = (o: object) => Object.keys(o).sort();

type Served = { handle: Pick<AppHandle, 'fetch'> };

/**
 * Serves `env`'s app on a free 127.0.0.1 port for the file's tests (vitest beforeAll/afterAll), as
 * the SDK tests need a real URL. `url()` is the base URL with `/v1`, valid once beforeAll has run.
 * `env` may be a function, for an app an earlier beforeAll builds (the real engine's).
 */
export function listenForFile(env: Served | (() => Served)): { url: () => string } {
  let server: ServerType;
  let url = '';
  beforeAll(async () => {
    const { handle } = typeof env === 'function' ? env() : env;
    await new Promise<void>((resolve) => {
      server = serve({ fetch: handle.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
        url = `http://127.0.0.1:${info.port}/v1`;
        resolve();
      });
    });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: () => url };
}
