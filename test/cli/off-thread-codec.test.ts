// The worker codec (src/cli/off-thread-codec.ts): what it answers is what the in-thread functions give
// (parseJsonBytes, the routes' zod schemas, encodeMessageParts, decodeMessage), its errors are the same classes with the same
// messages and statuses, the bytes handed to it are transferred (not copied), and a worker that has
// handled RECYCLE_BYTES is replaced once idle.
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MAX_JSON_DEPTH, parseJsonBytes } from '../../src/gateway/body.js';
import { createApp } from '../../src/gateway/app.js';
import { BODY_SCHEMAS } from '../../src/gateway/body-schemas.js';
import { ApiError, toHttpError } from '../../src/gateway/errors.js';
import { OffThreadCodec, RECYCLE_BYTES } from '../../src/cli/off-thread-codec.js';
import { FrameDecoder, FrameError } from '../../src/protocol/framing.js';
import { decodeMessage, encodeMessage, encodeMessageParts, ProtocolError } from '../../src/protocol/messages.js';
import { concatBytes } from '../doubles/bytes.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

const codec = new OffThreadCodec();
afterAll(() => codec.close());

const enc = new TextEncoder();
const concat = concatBytes;
/** What the call threw (or null), as the fields the HTTP layer and the protocol read. */
const failure = async (p: Promise<unknown> | (() => unknown)) => {
  try {
    await (typeof p === 'function' ? p() : p);
    return null;
  } catch (e) {
    const x = e as ApiError;
    return { cls: x.constructor.name, message: x.message, status: x.status, code: x.code, param: x.param };
  }
};

describe('OffThreadCodec.parseBody', () => {
  it('parses as parseJsonBytes does, and the bytes handed over are transferred', async () => {
    const body = { model: 'm', messages: [{ role: 'user', content: '你好 "x"\\' + 'y'.repeat(200_000) }] };
    const bytes = enc.encode(JSON.stringify(body));
    const size = bytes.byteLength;
    expect(await codec.parseBody(bytes)).toEqual(body);
    expect(bytes.byteLength).toBe(0); // detached: moved to the worker, not copied
    expect(size).toBeGreaterThan(200_000);
  });

  it('refuses what parseJsonBytes refuses, with the same ApiError', async () => {
    const cases = [
      Uint8Array.of(0x7b, 0xff, 0x7d), // not UTF-8
      enc.encode('{"a": '), // not JSON
      enc.encode(`{"a":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}}`), // too deep
      enc.encode('[1, 2]'), // not an object
    ];
    for (const bytes of cases) {
      const inThread = await failure(() => parseJsonBytes(bytes.slice()));
      expect(inThread).not.toBeNull();
      expect(inThread!.cls).toBe('ApiError');
      expect(await failure(codec.parseBody(bytes))).toEqual(inThread);
    }
  });
});

describe('OffThreadCodec.parseBody with a schema', () => {
  // A 4,096-message chat: the size of issue #26's attack row, whose validation held the gateway's loop.
  const messages = Array.from({ length: 4096 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` }));

  it("gives the schema's output, as the route's own parse gives it", async () => {
    for (const [name, body] of [
      ['chat', { model: 'm', messages, max_tokens: 4, logit_bias: { '7': 1 } }],
      ['tokenize', { model: 'm', messages }],
      ['completion', { model: 'm', prompt: Array.from({ length: 50_000 }, (_, i) => i % 1000), stream: true }],
    ] as const) {
      const want = BODY_SCHEMAS[name].parse(body);
      expect(await codec.parseBody(enc.encode(JSON.stringify(body)), name)).toEqual(want);
    }
  });

  it('refuses what the schema refuses, with the same HTTP error (status, message, param)', async () => {
    const bad = [
      ['chat', { model: 'm', messages: [...messages, { role: 'user', content: 5 }] }],
      ['chat', { model: 'm', messages: [...messages, ...messages] }], // past MAX_CHAT_MESSAGES
      ['chat', { model: 'm', messages, logit_bias: { __proto__x: 1 } }],
      ['completion', { model: 'm', prompt: 'x', max_tokens: -1 }],
      ['tokenize', { model: 'm' }],
    ] as const;
    for (const [name, body] of bad) {
      const inThread = BODY_SCHEMAS[name].safeParse(body);
      expect(inThread.success).toBe(false);
      const off = await codec.parseBody(enc.encode(JSON.stringify(body)), name).then(
        () => null,
        (e: unknown) => e,
      );
      // An Error (the HTTP layer's error handler takes only Errors) and the schema's own class.
      expect(off).toBeInstanceOf(Error);
      expect(off).toBeInstanceOf(z.ZodError);
      expect(toHttpError(off)).toEqual(toHttpError(inThread.error));
      expect(toHttpError(off).status).toBe(400);
    }
  });
});

describe('the gateway with the codec as its body parser', () => {
  it('answers a large body its schema refuses with the 400 the in-thread path gives, as an OpenAI error (session 19: an empty 500)', async () => {
    const { app } = createApp({ engine: new FakeEngineClient(), parseLargeBody: (bytes, schema) => codec.parseBody(bytes, schema) });
    const messages = Array.from({ length: 5000 }, () => ({ role: 'user', content: 'x' }));
    const res = await app.request('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(toHttpError(BODY_SCHEMAS.chat.safeParse({ model: 'm', messages }).error).body);
  });
});

describe('OffThreadCodec.encode / decode', () => {
  const tokenize = { cid: 7, req: { prompt: 'é'.repeat(100_000), addSpecialTokens: true, addGenerationPrompt: false } };

  it('encode gives the bytes encodeMessageParts gives; decode the message decodeMessage gives', async () => {
    const parts = await codec.encode('TOKENIZE', tokenize, 16 << 20);
    expect(concat(parts)).toEqual(concat(encodeMessageParts('TOKENIZE', tokenize)));
    const [frame] = new FrameDecoder().push(encodeMessage('TOKENIZE', tokenize));
    const expected = decodeMessage({ type: frame!.type, payload: frame!.payload.slice() });
    expect(await codec.decode(frame!)).toEqual(expected);
    expect(frame!.payload.byteLength).toBe(0); // transferred
  });

  it('an encoding past the frame limit is a FrameError; a malformed frame a ProtocolError, as on this thread', async () => {
    const tooBig = await failure(codec.encode('TOKENIZE', tokenize, 1000));
    expect(tooBig).toEqual(await failure(() => encodeMessageParts('TOKENIZE', tokenize, 1000)));
    expect(tooBig!.cls).toBe(FrameError.name);
    const payload = enc.encode(JSON.stringify({ cid: 1, req: { prompt: 5 } }));
    const inThread = await failure(() => decodeMessage({ type: 0x23, payload: payload.slice() }));
    expect(inThread!.cls).toBe(ProtocolError.name);
    expect(await failure(codec.decode({ type: 0x23, payload }))).toEqual(inThread);
  });
});

describe('OffThreadCodec recycling', () => {
  it('a worker past RECYCLE_BYTES is replaced once idle; the next job goes to the new one', async () => {
    const fresh = new OffThreadCodec(0);
    try {
      const before = fresh.started;
      const big = enc.encode(JSON.stringify({ pad: 'x'.repeat(RECYCLE_BYTES) }));
      expect(((await fresh.parseBody(big)) as { pad: string }).pad).toHaveLength(RECYCLE_BYTES);
      expect(fresh.started).toBe(before + 1);
      expect(await fresh.parseBody(enc.encode('{"a":1}'))).toEqual({ a: 1 });
    } finally {
      await fresh.close();
    }
  });

  it('with an idle delay, it is replaced once that long has passed without a job', async () => {
    const fresh = new OffThreadCodec(50);
    try {
      const before = fresh.started;
      await fresh.parseBody(enc.encode(JSON.stringify({ pad: 'x'.repeat(RECYCLE_BYTES) })));
      expect(fresh.started).toBe(before); // not yet: it has just been busy
      while (fresh.started === before) await new Promise((r) => setTimeout(r, 10));
      expect(await fresh.parseBody(enc.encode('{"a":1}'))).toEqual({ a: 1 });
    } finally {
      await fresh.close();
    }
  });
});
