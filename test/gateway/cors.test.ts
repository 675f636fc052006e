// CORS preflights allow what browser clients send: openai-node's x-stainless-* family, OpenAI-Organization,
// OpenAI-Project (any well-formed header the page asks for), for allowed origins only; responses expose
// the headers clients read. The real-browser proof is test/gateway/ui/browser-openai.test.ts.
import { describe, expect, it } from 'vitest';
import { MODEL, setup } from './helpers.js';

// What openai-node 6 asks for in a browser (from its request builder), plus a page's own header.
const OPENAI_NODE_HEADERS = [
  'authorization', 'content-type', 'openai-organization', 'openai-project', 'x-request-id', 'x-stainless-arch',
  'x-stainless-lang', 'x-stainless-os', 'x-stainless-package-version', 'x-stainless-retry-count', 'x-stainless-runtime',
  'x-stainless-runtime-version', 'x-stainless-timeout', 'x-custom-tracing',
];

const preflight = (handle: ReturnType<typeof setup>['handle'], origin: string, headers: string, method = 'POST') =>
  handle.app.request('/v1/responses', {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

describe('CORS preflight', () => {
  it("allows every header openai-node asks for, for an allowed origin (and names the origin, not '*')", async () => {
    const { handle } = setup({ allowedOrigins: ['https://app.example'], apiKey: 'k' });
    const pre = await preflight(handle, 'https://app.example', OPENAI_NODE_HEADERS.map((h) => h.toUpperCase()).join(', '));
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const allowed = pre.headers.get('access-control-allow-headers')!.split(',').map((h) => h.trim());
    expect(allowed.sort()).toEqual([...OPENAI_NODE_HEADERS].sort());
    expect(pre.headers.get('access-control-allow-methods')).toMatch(/\bDELETE\b/);
    expect(pre.headers.get('vary')).toMatch(/Origin/);
  });

  it('allows any origin with "*", and none for an origin not on the list', async () => {
    const any = setup({ allowedOrigins: '*' });
    const ok = await preflight(any.handle, 'https://anything.example', 'x-stainless-os');
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    expect(ok.headers.get('access-control-allow-headers')).toBe('x-stainless-os');
    const listed = setup({ allowedOrigins: ['https://app.example'] });
    const evil = await preflight(listed.handle, 'https://evil.example', 'authorization, x-stainless-os');
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect(evil.headers.get('access-control-allow-headers')).toBeNull();
  });

  it('drops malformed header names and caps the list', async () => {
    const { handle } = setup({ allowedOrigins: '*' });
    const pre = await preflight(handle, 'https://a.example', 'authorization, bad header, x(y), , ' + Array.from({ length: 100 }, (_, i) => `x-h${i}`).join(','));
    const allowed = pre.headers.get('access-control-allow-headers')!.split(', ');
    expect(allowed[0]).toBe('authorization');
    expect(allowed).not.toContain('bad header');
    expect(allowed).not.toContain('x(y)');
    expect(allowed.length).toBe(64);
  });

  it('exposes the response headers clients read, on answers and on errors', async () => {
    const { post } = setup({ allowedOrigins: ['https://app.example'], apiKey: 'k' });
    for (const res of [
      await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }, { origin: 'https://app.example', authorization: 'Bearer k' }),
      await post('/v1/chat/completions', {}, { origin: 'https://app.example' }),
    ]) {
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
      const exposed = res.headers.get('access-control-expose-headers')!.toLowerCase();
      for (const h of ['x-request-id', 'retry-after']) expect(exposed).toContain(h);
    }
  });
});
