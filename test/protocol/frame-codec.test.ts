// A FrameCodec on both ends of the engine protocol (src/protocol/frame-codec.ts): only large inputs are
// handed to it, other frames never wait for it (no stream stalls behind one client's megabytes), a
// request's ABORT never takes effect before its SUBMIT, and its failures end as the in-thread path's would. The codec here runs on this thread, its
// answers released by the test; the worker one is test/cli/off-thread-codec.test.ts.
import { describe, expect, it } from 'vitest';
import type { SubmitRequest } from '../../src/protocol/engine-client.js';
import type { FrameCodec } from '../../src/protocol/frame-codec.js';
import { FramedEngineClient } from '../../src/protocol/framed-client.js';
import { FrameDecoder, type Frame } from '../../src/protocol/framing.js';
import {
  decodeMessage,
  encodeMessage,
  encodeMessageParts,
  inputBytes,
  LARGE_INPUT_BYTES,
  PROTOCOL_VERSION,
  ProtocolError,
  type Message,
  type MessageBody,
  type MsgTypeName,
} from '../../src/protocol/messages.js';
import { serveEngine } from '../../src/protocol/serve-engine.js';
import { createTransportPair } from '../../src/protocol/transport.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';
import { sampling } from '../sidecar/server/helpers.js';

/** A codec whose answers wait until release() (in the order asked), counting what it was given. */
class HeldCodec implements FrameCodec {
  held: (() => void)[] = [];
  encoded: MsgTypeName[] = [];
  decoded: number[] = [];
  encode<T extends MsgTypeName>(type: T, body: MessageBody<T>, maxFrameBytes: number): Promise<Uint8Array[]> {
    this.encoded.push(type);
    return this.hold(() => encodeMessageParts(type, body, maxFrameBytes));
  }
  decode(frame: Frame): Promise<Message> {
    this.decoded.push(frame.payload.length);
    return this.hold(() => decodeMessage(frame));
  }
  release(): void {
    for (const go of this.held.splice(0)) go();
  }
  private hold<R>(f: () => R): Promise<R> {
    return new Promise<R>((resolve, reject) =>
      this.held.push(() => {
        try {
          resolve(f());
        } catch (e) {
          reject(e as Error);
        }
      }),
    );
  }
}

const submit = (id: string, text: string): SubmitRequest => ({ id, prompt: { kind: 'text', text }, sampling: sampling({ maxTokens: 2 }), n: 1, echo: false });

const until = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setImmediate(r));
};

describe('inputBytes', () => {
  it('estimates a SUBMIT or TOKENIZE from lengths only, and is 0 for messages without client input', () => {
    expect(inputBytes('SUBMIT', { req: submit('a', 'x'.repeat(1000)) })).toBe(1000);
    const chat = { ...submit('a', ''), prompt: { kind: 'chat' as const, messages: [{ role: 'user' as const, content: 'hello' }], addGenerationPrompt: true } };
    expect(inputBytes('SUBMIT', { req: chat })).toBeGreaterThan(5);
    expect(inputBytes('TOKENIZE', { cid: 1, req: { prompt: 'y'.repeat(70_000), addSpecialTokens: true, addGenerationPrompt: false } })).toBe(70_000);
    expect(inputBytes('TOKENIZE', { cid: 1, req: { messages: Array.from({ length: 4096 }, () => ({ role: 'user' as const, content: '' })), addSpecialTokens: true, addGenerationPrompt: false } })).toBeGreaterThan(LARGE_INPUT_BYTES);
    expect(inputBytes('HEALTH', { cid: 1 })).toBe(0);
  });
});

describe('the client with a codec', () => {
  it('hands only large inputs to it; other frames pass the one being encoded, its own ABORT waits for it', async () => {
    const codec = new HeldCodec();
    const [a, b] = createTransportPair();
    const seen: string[] = [];
    const decoder = new FrameDecoder();
    b.onData((chunk) => {
      for (const f of decoder.push(chunk)) {
        const msg = decodeMessage(f);
        if (msg.type === 'HELLO') void b.write(encodeMessage('HELLO_OK', { version: PROTOCOL_VERSION, model: new FakeEngineClient().info }));
        else seen.push(msg.type === 'SUBMIT' ? `SUBMIT ${msg.body.req.id}` : msg.type === 'ABORT' ? `ABORT ${msg.body.id}` : msg.type);
      }
    });
    const client = new FramedEngineClient({ connect: async () => a, codec });
    await client.model(); // connected
    const stop = new AbortController();
    const big = client.stream(submit('big', 'x'.repeat(LARGE_INPUT_BYTES + 1)), stop.signal)[Symbol.asyncIterator]().next();
    big.catch(() => undefined);
    await until(() => codec.encoded.length === 1);
    const small = client.stream(submit('small', 'hi'))[Symbol.asyncIterator]().next();
    small.catch(() => undefined);
    await until(() => seen.length === 1);
    expect(seen).toEqual(['SUBMIT small']); // not held behind the large SUBMIT still being encoded
    stop.abort();
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).toEqual(['SUBMIT small']); // the large one's ABORT waits for its SUBMIT
    codec.release();
    await until(() => seen.length === 3);
    expect(seen).toEqual(['SUBMIT small', 'SUBMIT big', 'ABORT big']);
    expect(codec.encoded).toEqual(['SUBMIT']);
    await client.close();
  });

  it('a frame the codec cannot encode (past the frame limit) fails that call, as on this thread', async () => {
    const codec = new HeldCodec();
    const [a, b] = createTransportPair();
    serveEngine(b, new FakeEngineClient());
    const client = new FramedEngineClient({ connect: async () => a, codec, maxFrameBytes: 2 * LARGE_INPUT_BYTES });
    await client.health();
    const tokenize = client.tokenize({ prompt: 'z'.repeat(3 * LARGE_INPUT_BYTES), addSpecialTokens: true, addGenerationPrompt: false });
    await until(() => codec.held.length === 1);
    codec.release();
    await expect(tokenize).rejects.toThrow(/exceeds the \d+-byte limit/);
    await client.close();
  });
});

/** A peer past HELLO on a served connection; `replies` collects the types of the frames it receives. */
async function authenticated(backend: FakeEngineClient, codec: FrameCodec) {
  const [a, b] = createTransportPair();
  serveEngine(b, backend, { codec });
  const replies: string[] = [];
  const decoder = new FrameDecoder();
  a.onData((chunk) => {
    for (const f of decoder.push(chunk)) replies.push(decodeMessage(f).type);
  });
  await a.write(encodeMessage('HELLO', { version: PROTOCOL_VERSION }));
  await until(() => replies.includes('HELLO_OK'));
  return { a, replies };
}

describe('serveEngine with a codec', () => {
  it('decodes large frames of an authenticated peer with it; the frames behind one do not wait for it', async () => {
    const codec = new HeldCodec();
    const backend = new FakeEngineClient();
    const handled: string[] = [];
    backend.tokenize = async (req) => {
      handled.push(`tokenize ${req.prompt!.length}`);
      return { tokens: [1], maxModelLen: 8 };
    };
    const health = backend.health.bind(backend);
    backend.health = () => (handled.push('health'), health());
    const { a } = await authenticated(backend, codec);
    const big = LARGE_INPUT_BYTES + 1;
    await a.write(encodeMessage('TOKENIZE', { cid: 1, req: { prompt: 'x'.repeat(big), addSpecialTokens: false, addGenerationPrompt: false } }));
    await a.write(encodeMessage('HEALTH', { cid: 2 }));
    await until(() => handled.length === 1);
    expect(handled).toEqual(['health']); // while the large frame is still being decoded
    expect(codec.held).toHaveLength(1);
    codec.release();
    await until(() => handled.length === 2);
    expect(handled).toEqual(['health', `tokenize ${big}`]);
    expect(codec.decoded).toHaveLength(1);
    expect(codec.decoded[0]).toBeGreaterThan(big);
  });

  it('an ABORT that comes while its SUBMIT is being decoded aborts the request once it is opened', async () => {
    const codec = new HeldCodec();
    const backend = new FakeEngineClient();
    const { a, replies } = await authenticated(backend, codec);
    await a.write(encodeMessage('SUBMIT', { req: submit('big', 'x'.repeat(LARGE_INPUT_BYTES + 1)) }));
    await until(() => codec.held.length === 1);
    await a.write(encodeMessage('ABORT', { id: 'big', cid: 3 }));
    await until(() => replies.includes('REPLY')); // the ABORT was handled, before the SUBMIT it names
    codec.release();
    // One abort from the ABORT frame (nothing open yet), one as the decoded SUBMIT is opened.
    await until(() => backend.aborts.filter((x) => x.id === 'big').length === 2);
    expect(backend.aborts.filter((x) => x.id === 'big')).toHaveLength(2);
  });

  it('a large frame the codec finds invalid closes the connection, as decodeMessage on this thread does', async () => {
    const codec = new HeldCodec();
    const errors: unknown[] = [];
    const [a, b] = createTransportPair();
    const served = serveEngine(b, new FakeEngineClient(), { codec, onError: (e) => errors.push(e) });
    await a.write(encodeMessage('HELLO', { version: PROTOCOL_VERSION }));
    const junk = new Uint8Array(LARGE_INPUT_BYTES + 10).fill(0x20);
    const header = new Uint8Array(5);
    header[0] = 0x23;
    new DataView(header.buffer).setUint32(1, junk.length);
    await a.write(header);
    await a.write(junk);
    await until(() => codec.held.length === 1);
    codec.release();
    await served.done;
    expect(errors.some((e) => e instanceof ProtocolError)).toBe(true);
  });
});
