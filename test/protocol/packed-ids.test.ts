// TOKENIZE's ids packed after the reply's JSON (REPLY_IDS, src/protocol/packed-ids.ts): the layout, the
// message, and the call end to end over serveEngine, including a sidecar that predates REPLY_IDS and a
// reply too large for a frame.
import { describe, expect, it } from 'vitest';
import type { TokenizeRequest } from '../../src/protocol/engine-client.js';
import { FramedEngineClient } from '../../src/protocol/framed-client.js';
import { encodeFrame, FrameDecoder, FrameError } from '../../src/protocol/framing.js';
import { decodeMessage, encodeMessage, MsgType, PROTOCOL_VERSION } from '../../src/protocol/messages.js';
import { packIds, unpackIds } from '../../src/protocol/packed-ids.js';
import { serveEngine, type EngineBackend } from '../../src/protocol/serve-engine.js';
import { createTransportPair, type ByteTransport } from '../../src/protocol/transport.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

const utf8 = new TextEncoder();
const ids = (n: number) => Int32Array.from({ length: n }, (_, i) => (i % 7 === 3 ? -i : i * 104_729) | 0);
const TOKENIZE: TokenizeRequest = { prompt: 'x', addSpecialTokens: false, addGenerationPrompt: false };

describe('packIds / unpackIds', () => {
  it.each([0, 1, 2, 3, 4, 5])('round-trips with a %i-byte JSON part (every padding), negative and large ids, none at all', (jsonBytes) => {
    const json = utf8.encode('x'.repeat(jsonBytes));
    for (const v of [new Int32Array(0), Int32Array.from([0, -1, 2 ** 31 - 1, -(2 ** 31)]), ids(1000)]) {
      const out = unpackIds(packIds(json, v));
      expect(Array.from(out.json)).toEqual(Array.from(json));
      expect(Array.from(out.ids)).toEqual(Array.from(v));
    }
  });

  it('decodes a payload at any byte offset (an unaligned view is copied) and little-endian on the wire', () => {
    const packed = packIds(utf8.encode('{}'), Int32Array.from([1, 256, -2]));
    expect(Array.from(packed.subarray(8, 12))).toEqual([1, 0, 0, 0]); // 4 + 2 JSON bytes, padded to 8
    const shifted = new Uint8Array(packed.length + 1);
    shifted.set(packed, 1);
    expect(Array.from(unpackIds(shifted.subarray(1)).ids)).toEqual([1, 256, -2]);
  });

  it('refuses layouts that do not add up', () => {
    expect(() => unpackIds(new Uint8Array(3))).toThrow(FrameError);
    const packed = packIds(utf8.encode('{}'), Int32Array.from([1, 2]));
    expect(() => unpackIds(packed.subarray(0, packed.length - 1))).toThrow(/do not add up/);
    const lying = packed.slice();
    new DataView(lying.buffer).setUint32(0, 1000, false);
    expect(() => unpackIds(lying)).toThrow(FrameError);
  });

  it('REPLY_IDS: the JSON part is validated, the ids ride beside it', () => {
    const frame = encodeMessage('REPLY_IDS', { cid: 7, ok: true, result: { maxModelLen: 64 }, ids: ids(10) });
    const [decoded] = new FrameDecoder().push(frame);
    const msg = decodeMessage(decoded!);
    expect(msg.type).toBe('REPLY_IDS');
    if (msg.type !== 'REPLY_IDS') return;
    expect(msg.body).toMatchObject({ cid: 7, ok: true, result: { maxModelLen: 64 } });
    expect(Array.from(msg.body.ids)).toEqual(Array.from(ids(10)));
    const bad = encodeFrame(MsgType.REPLY_IDS, packIds(utf8.encode('{"cid":-1,"ok":true,"result":{}}'), ids(2)));
    expect(() => decodeMessage(new FrameDecoder().push(bad)[0]!)).toThrow(/REPLY_IDS/);
  });
});

/** A client of `backend` served by serveEngine over an in-memory pair. */
function client(backend: EngineBackend, maxFrameBytes?: number): FramedEngineClient {
  return new FramedEngineClient({
    connect: async () => {
      const [a, b] = createTransportPair();
      serveEngine(b, backend, { maxFrameBytes });
      return a;
    },
  });
}

describe('TOKENIZE over the engine protocol', () => {
  it.each([
    ['an Int32Array (the tokenizer pool)', (v: Int32Array) => v],
    ['an array (inline tokenizing)', (v: Int32Array) => Array.from(v)],
  ])('the ids arrive packed, equal to the backend’s, when the backend returns %s', async (_, as) => {
    const backend = new FakeEngineClient();
    const want = ids(100_000);
    backend.tokenize = async () => ({ tokens: as(want), maxModelLen: 4096, tokenStrs: ['a'] });
    const c = client(backend);
    const got = await c.tokenize(TOKENIZE);
    expect(got.tokens).toBeInstanceOf(Int32Array);
    expect(Array.from(got.tokens)).toEqual(Array.from(want));
    expect(got).toMatchObject({ maxModelLen: 4096, tokenStrs: ['a'] });
    await c.close();
  });

  it('a client that does not ask for packed ids gets a JSON array, also from an Int32Array backend', async () => {
    const backend = new FakeEngineClient();
    backend.tokenize = async () => ({ tokens: Int32Array.from([5, 6, 7]), maxModelLen: 16 });
    const [a, b] = createTransportPair();
    serveEngine(b, backend);
    const replies = frames(a);
    await a.write(encodeMessage('HELLO', { version: PROTOCOL_VERSION }));
    await a.write(encodeMessage('TOKENIZE', { cid: 1, req: TOKENIZE }));
    const reply = await replies.next('REPLY');
    expect(reply).toEqual({ cid: 1, ok: true, result: { tokens: [5, 6, 7], maxModelLen: 16 } });
  });

  it('a sidecar that predates REPLY_IDS (ignores `packed`, answers REPLY with an array) still serves the client', async () => {
    const model = await new FakeEngineClient().model();
    const c = new FramedEngineClient({
      connect: async () => {
        const [a, b] = createTransportPair();
        const incoming = frames(b);
        void (async () => {
          await incoming.next('HELLO');
          await b.write(encodeMessage('HELLO_OK', { version: PROTOCOL_VERSION, model }));
          const t = (await incoming.next('TOKENIZE')) as { cid: number };
          await b.write(encodeMessage('REPLY', { cid: t.cid, ok: true, result: { tokens: [1, 2, 3], maxModelLen: 8 } }));
        })();
        return a;
      },
    });
    expect(await c.tokenize(TOKENIZE)).toEqual({ tokens: [1, 2, 3], maxModelLen: 8 });
    await c.close();
  });

  it('a reply past the frame limit is an error the caller receives, not a call left waiting', async () => {
    const backend = new FakeEngineClient();
    backend.tokenize = async () => ({ tokens: ids(2000), maxModelLen: 16 }); // 8 KB packed
    const c = client(backend, 4096);
    await expect(c.tokenize(TOKENIZE)).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/reply is too large/) });
    expect((await c.health()).ready).toBe(true); // the connection serves on
    await c.close();
  });
});

/** Decoded messages from `t`, awaited by type in arrival order. */
function frames(t: ByteTransport) {
  const decoder = new FrameDecoder();
  const seen: { type: string; body: unknown }[] = [];
  const waiters: (() => void)[] = [];
  t.onData((chunk) => {
    for (const f of decoder.push(chunk)) seen.push(decodeMessage(f));
    for (const w of waiters.splice(0)) w();
  });
  return {
    async next(type: string): Promise<unknown> {
      for (;;) {
        const i = seen.findIndex((m) => m.type === type);
        if (i >= 0) return seen.splice(i, 1)[0]!.body;
        await new Promise<void>((r) => waiters.push(r));
      }
    },
  };
}
