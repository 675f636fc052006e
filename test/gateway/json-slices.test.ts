// /tokenize answers with millions of ids are written in slices (src/gateway/json-slices.ts): the body is
// the JSON the small answer would be, byte for byte parseable to the same value, and other work runs
// between its slices.
import { describe, expect, it } from 'vitest';
import { formatIds, SLICE, slicedJsonBody } from '../../src/gateway/json-slices.js';
import { setup } from './helpers.js';

const text = async (s: ReadableStream<Uint8Array>) => new Response(s).text();
const ids = (n: number) => Int32Array.from({ length: n }, (_, i) => (i % 5 === 2 ? -i : (i * 2_654_435_761) % 103_424) | 0);
const STRS = ['a', '"quoted"', 'back\\slash', 'line\nbreak', '你好', '\u0000', 'Ġword', ''];

describe('formatIds', () => {
  it('writes what Array.prototype.join writes, for every digit count, sign and the int32 extremes', () => {
    const v = Int32Array.from([0, 1, 9, 10, 99, 100, 12345, 103423, -1, -10, -999, 2 ** 31 - 1, -(2 ** 31), 1_000_000_000]);
    const dec = new TextDecoder();
    expect(dec.decode(formatIds(v, 0, v.length))).toBe(Array.from(v).join(','));
    expect(dec.decode(formatIds(v, 3, 7))).toBe(',' + Array.from(v.subarray(3, 7)).join(','));
    expect(dec.decode(formatIds([], 0, 0))).toBe('');
  });

  it('refuses a value that is not an integer rather than write invalid JSON', () => {
    expect(() => formatIds([1.5], 0, 1)).toThrow(/not an integer/);
  });
});

describe('slicedJsonBody', () => {
  it.each([0, 1, SLICE - 1, SLICE, SLICE + 1, 3 * SLICE + 5])('%i ids and their strings: the JSON of the whole object', async (n) => {
    const v = ids(n);
    const strs = Array.from({ length: n }, (_, i) => STRS[i % STRS.length]!);
    const head = { count: n, max_model_len: 4096 };
    const body = await text(slicedJsonBody(head, [{ key: 'tokens', ids: v }, { key: 'token_strs', strings: strs }]));
    expect(body).toBe(JSON.stringify({ ...head, tokens: Array.from(v), token_strs: strs }));
  });

  it('an empty head and an array-only body', async () => {
    expect(await text(slicedJsonBody({}, [{ key: 't', ids: [1, 2] }]))).toBe('{"t":[1,2]}');
  });

  it('other tasks run between slices: a timer set before reading fires before the body ends', async () => {
    const reader = slicedJsonBody({ count: 1 }, [{ key: 'tokens', ids: ids(8 * SLICE) }]).getReader();
    let chunksWhenTimerFired = -1;
    let chunks = 0;
    setTimeout(() => (chunksWhenTimerFired = chunks), 0);
    while (!(await reader.read()).done) chunks++;
    expect(chunks).toBe(8 + 2); // the head, 8 slices, the tail
    expect(chunksWhenTimerFired).toBeGreaterThanOrEqual(0);
    expect(chunksWhenTimerFired).toBeLessThan(chunks);
  });
});

describe('POST /tokenize with more than one slice of ids', () => {
  it('answers the same JSON as a small answer, with token_strs when asked', async () => {
    const { engine, post } = setup();
    const v = ids(2 * SLICE + 3);
    const strs = Array.from(v, (id) => `t${id}`);
    engine.tokenize = async () => ({ tokens: v, maxModelLen: 8192, tokenStrs: strs });
    const res = await post('/tokenize', { prompt: 'many', return_token_strs: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ count: v.length, max_model_len: 8192, tokens: Array.from(v), token_strs: strs });
    const plain = await post('/tokenize', { prompt: 'many' });
    expect(await plain.json()).toEqual({ count: v.length, max_model_len: 8192, tokens: Array.from(v) });
  });
});
