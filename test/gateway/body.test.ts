// readJsonBody's two reading paths: a declared content-length (the body is taken whole: the runtime's
// fast path) and none (a stream pulled under the limit). Both enforce the same limit.
import { describe, expect, it } from 'vitest';
import { readJsonBody } from '../../src/gateway/body.js';
import { ApiError } from '../../src/gateway/errors.js';

const post = (body: BodyInit, headers: Record<string, string> = {}) =>
  new Request('http://x/v1/completions', { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, duplex: 'half' } as RequestInit);
const status = (p: Promise<unknown>) => p.then(() => 0, (e: unknown) => (e instanceof ApiError ? e.status : -1));

describe('readJsonBody', () => {
  it('reads a body with a declared length whole, and one without as a stream, to the same object', async () => {
    const json = JSON.stringify({ prompt: '你好', max_tokens: 3 });
    const bytes = new TextEncoder().encode(json);
    expect(await readJsonBody(post(json, { 'content-length': String(bytes.length) }), 1000)).toEqual({ prompt: '你好', max_tokens: 3 });
    const stream = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(bytes), c.close()) });
    expect(await readJsonBody(post(stream), 1000)).toEqual({ prompt: '你好', max_tokens: 3 });
  });

  it('413 for a declared length past the limit, and for a body past the limit whatever the header says', async () => {
    expect(await status(readJsonBody(post('{}', { 'content-length': '5000' }), 1000))).toBe(413);
    // A Request built in memory may carry any header: the bytes read are checked too.
    expect(await status(readJsonBody(post(JSON.stringify({ pad: 'x'.repeat(2000) }), { 'content-length': '10' }), 1000))).toBe(413);
    expect(await status(readJsonBody(post(JSON.stringify({ pad: 'x'.repeat(2000) })), 1000))).toBe(413);
  });

  it('a malformed content-length falls back to the limited stream read', async () => {
    expect(await readJsonBody(post('{"a":1}', { 'content-length': 'seven' }), 1000)).toEqual({ a: 1 });
  });
});
