import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder, FrameError } from '../../src/protocol/framing.js';
import { decodeMessage, encodeMessage, MsgType, ProtocolError, type Message } from '../../src/protocol/messages.js';
import { concatBytes } from '../doubles/bytes.js';

const sampling = {
  maxTokens: 8, temperature: 0.7, topP: 0.9, topK: 20, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
  logitBias: { '5': -1 }, seed: 1, stop: ['\n'], stopTokenIds: [2], ignoreEos: false, logprobs: 2, skipSpecialTokens: true,
};
const model = { id: 'm', root: '/m', maxModelLen: 128, maxNumSeqs: 8, vocabSize: 1000, createdAt: 1, generationDefaults: { temperature: 0.8 }, placeholder: false };

/** One sample of every message type. */
const SAMPLES: Message[] = [
  { type: 'HELLO', body: { version: 1, secret: 's3cret' } },
  { type: 'HELLO_OK', body: { version: 1, model } },
  { type: 'HELLO_ERR', body: { version: 1, code: 'INVALID_REQUEST', message: 'no' } },
  { type: 'SUBMIT', body: { req: { id: 'r1', prompt: { kind: 'chat', messages: [{ role: 'user', content: '你好' }], addGenerationPrompt: true }, sampling, n: 2, echo: false } } },
  { type: 'SUBMIT', body: { req: { id: 'r2', prompt: { kind: 'tokens', ids: [1, 2, 3] }, sampling: { ...sampling, maxTokens: null, seed: null, logprobs: null }, n: 1, echo: true } } },
  { type: 'ABORT', body: { id: 'r1', cid: 3 } },
  { type: 'STEP', body: { events: [['r1', { type: 'accepted', promptTokens: 3, promptTokenIds: [1, 2, 3], promptText: 'abc' }]] } },
  {
    type: 'STEP',
    body: {
      events: [
        ['r1', { type: 'delta', choices: [{ index: 0, text: '世', tokenIds: [9], logprobs: [{ tokenId: 9, token: '世', bytes: [228, 184, 150], logprob: -0.5, top: [] }], finishReason: 'stop', stopReason: '\n' }] }],
        ['r1', { type: 'done', usage: { promptTokens: 3, completionTokens: 1, cachedTokens: 0 }, timing: { queued: 0, ttft: null, e2e: 0.1 } }],
        ['r2', { type: 'error', code: 'QUEUE_FULL', message: 'full', param: null }],
      ],
    },
  },
  { type: 'CREDIT', body: { consumed: [['r1', 128], ['r2', 0]] } },
  { type: 'STATS', body: { cid: 1 } },
  { type: 'HEALTH', body: { cid: 2 } },
  { type: 'MODEL', body: { cid: 4 } },
  { type: 'TOKENIZE', body: { cid: 5, req: { prompt: 'hi', addSpecialTokens: true, addGenerationPrompt: false } } },
  { type: 'DETOKENIZE', body: { cid: 6, tokens: [1, 2] } },
  { type: 'RESPONSE_PUT', body: { cid: 7, id: 'resp_1', value: '{"a":1}' } },
  { type: 'RESPONSE_GET', body: { cid: 8, id: 'resp_1' } },
  { type: 'RESPONSE_DELETE', body: { cid: 9, id: 'resp_1' } },
  { type: 'REPLY', body: { cid: 6, ok: true, result: { prompt: 'hi' } } },
  { type: 'REPLY', body: { cid: 7, ok: false, error: { code: 'INTERNAL', message: 'x', param: null } } },
  { type: 'TOKENIZE', body: { cid: 8, req: { prompt: 'hi', addSpecialTokens: true, addGenerationPrompt: false }, packed: true } },
  { type: 'REPLY_IDS', body: { cid: 8, ok: true, result: { maxModelLen: 64 }, ids: Int32Array.from([1, -2, 3]) } },
];

function encodeAll(): Uint8Array {
  return concatBytes(SAMPLES.map((m) => encodeMessage(m.type, m.body as never)));
}

describe('codec', () => {
  it('round-trips every message type', () => {
    const types = new Set(SAMPLES.map((m) => m.type));
    expect(types).toEqual(new Set(Object.keys(MsgType)));
    for (const m of SAMPLES) {
      const frames = new FrameDecoder().push(encodeMessage(m.type, m.body as never));
      expect(frames).toHaveLength(1);
      expect(frames[0]!.type).toBe(MsgType[m.type]);
      expect(decodeMessage(frames[0]!)).toEqual(m);
    }
  });

  it('decodes the same messages under arbitrary chunk splits', () => {
    const bytes = encodeAll();
    let seed = 12345;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let trial = 0; trial < 200; trial++) {
      const dec = new FrameDecoder();
      const got: Message[] = [];
      let at = 0;
      while (at < bytes.length) {
        const size = trial === 0 ? 1 : 1 + Math.floor(rand() * (trial % 2 ? 16 : 400));
        for (const f of dec.push(bytes.subarray(at, at + size))) got.push(decodeMessage(f));
        at += size;
      }
      expect(got).toEqual(SAMPLES);
      expect(dec.idle).toBe(true);
    }
  });

  it('handles empty payloads and several frames per chunk', () => {
    const two = new Uint8Array([...encodeFrame(7, new Uint8Array(0)), ...encodeFrame(8, new Uint8Array([1, 2]))]);
    const frames = new FrameDecoder().push(two);
    expect(frames.map((f) => [f.type, [...f.payload]])).toEqual([[7, []], [8, [1, 2]]]);
  });

  it('rejects an oversized frame as soon as its header arrives', () => {
    const dec = new FrameDecoder(100);
    const header = new Uint8Array([MsgType.STEP, 0, 0, 0x10, 0]); // declares 4096 bytes
    expect(() => dec.push(header)).toThrow(FrameError);
    expect(() => dec.push(new Uint8Array([1]))).toThrow(/already failed/);
    expect(() => encodeFrame(1, new Uint8Array(101), 100)).toThrow(FrameError);
  });

  it('rejects unknown types, bad UTF-8/JSON and schema violations', () => {
    expect(() => decodeMessage({ type: 0x7f, payload: new Uint8Array() })).toThrow(ProtocolError);
    expect(() => decodeMessage({ type: MsgType.STATS, payload: new Uint8Array([0xff]) })).toThrow(/UTF-8 JSON/);
    const bad = (type: number, body: unknown) => ({ type, payload: new TextEncoder().encode(JSON.stringify(body)) });
    expect(() => decodeMessage(bad(MsgType.STATS, { cid: -1 }))).toThrow(ProtocolError);
    expect(() => decodeMessage(bad(MsgType.STEP, { events: [['x', { type: 'delta', choices: [{ index: 0 }] }]] }))).toThrow(ProtocolError);
    expect(() => decodeMessage(bad(MsgType.STEP, { events: [['x', { type: 'error', code: 'WHATEVER', message: '', param: null }]] }))).toThrow(ProtocolError);
    expect(() => decodeMessage(bad(MsgType.STEP, { events: [['x', { type: 'delta', choices: [{ index: 0, text: '', tokenIds: [], finishReason: 'maybe' }] }]] }))).toThrow(ProtocolError);
    expect(() => decodeMessage(bad(MsgType.STEP, { events: [{ id: 'x' }] }))).toThrow(ProtocolError);
    expect(() => decodeMessage(bad(MsgType.CREDIT, { consumed: [['x', -1]] }))).toThrow(ProtocolError);
    // Lists of token ids: integers only (checked in one loop, not per element).
    const submit = (ids: unknown) => bad(MsgType.SUBMIT, { req: { id: 'r', prompt: { kind: 'tokens', ids }, sampling, n: 1, echo: false } });
    expect(decodeMessage(submit([0, 7, 2 ** 20]))).toMatchObject({ type: 'SUBMIT', body: { req: { prompt: { ids: [0, 7, 2 ** 20] } } } });
    for (const ids of [[1, 2.5], [1, '2'], [null], 'abc', { 0: 1 }]) expect(() => decodeMessage(submit(ids)), JSON.stringify(ids)).toThrow(/SUBMIT: req.prompt.ids/);
    expect(() => decodeMessage(bad(MsgType.SUBMIT, { req: { id: 'r', prompt: { kind: 'text', text: 'x' }, sampling: { ...sampling, stopTokenIds: [1.5] }, n: 1, echo: false } }))).toThrow(ProtocolError);
    expect(() => decodeMessage(bad(MsgType.DETOKENIZE, { cid: 1, tokens: ['a'] }))).toThrow(ProtocolError);
    expect(() => decodeMessage(bad(MsgType.STEP, { events: [['x', { type: 'accepted', promptTokens: 1, promptTokenIds: [0.5] }]] }))).toThrow(ProtocolError);
  });
});
