// readJsonBody's two reading paths: a declared content-length (the body is taken whole: the runtime's
// fast path) and none (a stream pulled under the limit). Both enforce the same limit.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BODY_SCHEMAS, type BodySchemaName } from '../../src/gateway/body-schemas.js';
import { jsonDepth, LARGE_BODY_BYTES, MAX_JSON_DEPTH, OFF_THREAD_BODY_BYTES, parseJsonBytes, readJsonBody, readValidBody } from '../../src/gateway/body.js';
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

/** The character-by-character scan jsonDepth replaced: the reference its results are checked against. */
function depthByChars(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) max = Math.max(max, ++depth);
    else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return max;
}

describe('jsonDepth', () => {
  it('counts brackets outside strings only; escaped quotes and backslash runs do not end a string', () => {
    const cases: [string, number][] = [
      ['{}', 1],
      ['{"a":[[1]]}', 3],
      ['{"a":"[[[{{{"}', 1],
      ['{"a":"x\\\\"}', 1], // the string ends after an escaped backslash
      ['{"a":"\\\\"[[]]', 3],
      ['{"a":"\\\\\\"[["}', 1], // an escaped backslash, then an escaped quote: still inside
      ['["unterminated [[[', 1],
      ['', 0],
    ];
    for (const [text, depth] of cases) {
      expect(jsonDepth(text), text).toBe(depth);
      expect(depthByChars(text), text).toBe(depth);
    }
  });

  it('agrees with the character scan on 2,000 random strings of quotes, backslashes and brackets', () => {
    let seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const alphabet = ['"', '\\', '[', ']', '{', '}', 'a', ','];
    for (let n = 0; n < 2000; n++) {
      const text = Array.from({ length: Math.floor(rnd() * 60) }, () => alphabet[Math.floor(rnd() * alphabet.length)]).join('');
      expect(jsonDepth(text), text).toBe(depthByChars(text));
    }
  });
});

describe('readJsonBody of a large body', () => {
  it('parses it the same, refuses deep nesting the same, and lets other tasks run between its passes', async () => {
    const big = { prompt: 'x"\\y'.repeat(LARGE_BODY_BYTES / 2), max_tokens: 3 };
    const json = JSON.stringify(big);
    let passesBefore = 0;
    let done = false;
    // A timer chain running beside the read: it gets turns before the read has finished.
    const ticker = (async () => {
      while (!done) {
        await new Promise((r) => setTimeout(r, 0));
        if (!done) passesBefore++;
      }
    })();
    const parsed = await readJsonBody(post(json, { 'content-length': String(json.length) }), 8 * LARGE_BODY_BYTES);
    done = true;
    await ticker;
    expect(parsed).toEqual(big);
    expect(passesBefore).toBeGreaterThanOrEqual(3);
    const deep = `{"pad":"${'x'.repeat(LARGE_BODY_BYTES)}","a":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`;
    expect(await status(readJsonBody(post(deep), 8 * LARGE_BODY_BYTES))).toBe(400);
  });
});

describe('readValidBody', () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(OFF_THREAD_BODY_BYTES) }] };
  const json = JSON.stringify(body);

  it('validates here what it parses here, and hands the schema name with the bodies it hands over', async () => {
    const given: (string | undefined)[] = [];
    const parser = async (bytes: Uint8Array, schema?: BodySchemaName) => {
      given.push(schema);
      return BODY_SCHEMAS[schema!].parse(parseJsonBytes(bytes));
    };
    const want = BODY_SCHEMAS.chat.parse(body);
    expect(await readValidBody(post(json), 8 * OFF_THREAD_BODY_BYTES, 'chat', parser)).toEqual(want);
    expect(given).toEqual(['chat']);
    const small = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect(await readValidBody(post(JSON.stringify(small)), 8 * OFF_THREAD_BODY_BYTES, 'chat', parser)).toEqual(BODY_SCHEMAS.chat.parse(small));
    expect(given).toEqual(['chat']);
    // Validated here too: the schema's error, with no parser or a small body.
    const bad = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 5 }] });
    await expect(readValidBody(post(bad), 8 * OFF_THREAD_BODY_BYTES, 'chat')).rejects.toBeInstanceOf(z.ZodError);
    await expect(readValidBody(post(bad), 8 * OFF_THREAD_BODY_BYTES, 'chat', parser)).rejects.toBeInstanceOf(z.ZodError);
  });
});

describe('readJsonBody with a parser elsewhere (BodyParser)', () => {
  it('hands it the bodies past OFF_THREAD_BODY_BYTES, after the size checks, and parses smaller ones itself', async () => {
    const given: number[] = [];
    const parser = async (bytes: Uint8Array) => {
      given.push(bytes.byteLength);
      return parseJsonBytes(bytes);
    };
    const small = JSON.stringify({ prompt: 'x'.repeat(OFF_THREAD_BODY_BYTES - 100) });
    expect(await readJsonBody(post(small), 8 * OFF_THREAD_BODY_BYTES, parser)).toEqual(JSON.parse(small));
    expect(given).toEqual([]);
    const large = JSON.stringify({ prompt: 'x'.repeat(OFF_THREAD_BODY_BYTES) });
    expect(await readJsonBody(post(large, { 'content-length': String(large.length) }), 8 * OFF_THREAD_BODY_BYTES, parser)).toEqual(JSON.parse(large));
    expect(given).toEqual([large.length]);
    // The limit is checked before anything is handed over; the parser's refusal is readJsonBody's.
    expect(await status(readJsonBody(post(large), OFF_THREAD_BODY_BYTES, parser))).toBe(413);
    expect(await status(readJsonBody(post(`[${large}]`), 8 * OFF_THREAD_BODY_BYTES, parser))).toBe(400);
    expect(given).toEqual([large.length, large.length + 2]);
  });
});
