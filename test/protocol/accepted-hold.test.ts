// serveEngine's `accepted` hold (issue #23): an `accepted` alone makes no STEP frame; it leaves with the
// next frame any stream causes, in order, or after ACCEPTED_HOLD_MS. A scripted push backend decides
// when each stream's events are made; the peer is raw frames on an in-memory pair; time is fake.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SubmitRequest } from '../../src/protocol/engine-client.js';
import { FrameDecoder } from '../../src/protocol/framing.js';
import { decodeMessage, encodeMessage, PROTOCOL_VERSION, type Message, type WireEvent } from '../../src/protocol/messages.js';
import type { Emit, PushedStream } from '../../src/protocol/push-stream.js';
import { ACCEPTED_HOLD_MS, serveEngine } from '../../src/protocol/serve-engine.js';
import { createTransportPair } from '../../src/protocol/transport.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

const sampling: SubmitRequest['sampling'] = {
  maxTokens: 6, temperature: 0, topP: 1, topK: -1, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
  logitBias: {}, seed: null, stop: [], stopTokenIds: [], ignoreEos: true, logprobs: null, skipSpecialTokens: true,
};
const req = (id: string): SubmitRequest => ({ id, prompt: { kind: 'text', text: 'hello' }, sampling, n: 1, echo: false });
const delta = (text: string): WireEvent => ({ type: 'delta', choices: [{ index: 0, text, tokenIds: [7] }] });
const done: WireEvent = { type: 'done', usage: { promptTokens: 3, completionTokens: 1, cachedTokens: 0 }, timing: { queued: 0, ttft: 0.01, e2e: 0.02 } };

/** A push backend that accepts every request at once and makes its later events when the test says. */
class ScriptedBackend extends FakeEngineClient {
  readonly emits = new Map<string, Emit>();
  open(r: SubmitRequest, emit: Emit): PushedStream {
    this.emits.set(r.id, emit);
    emit({ type: 'accepted', promptTokens: 3 });
    // An abort ends the request with its last events, as the sidecar's does.
    return { credit: () => undefined, abort: () => emit(done) };
  }
  emit(id: string, ev: WireEvent): void {
    this.emits.get(id)!(ev);
  }
}

/** A handshaken raw peer of serveEngine: what it sent, and the STEP frames' events it received. */
async function connect() {
  const backend = new ScriptedBackend();
  const [peer, server] = createTransportPair();
  const errors: unknown[] = [];
  serveEngine(server, backend, { onError: (e) => errors.push(e) });
  const received: Message[] = [];
  const decoder = new FrameDecoder();
  peer.onData((chunk) => {
    for (const frame of decoder.push(chunk)) received.push(decodeMessage(frame));
  });
  await peer.write(encodeMessage('HELLO', { version: PROTOCOL_VERSION }));
  await vi.advanceTimersByTimeAsync(0);
  expect(received.map((m) => m.type)).toEqual(['HELLO_OK']);
  received.length = 0;
  const steps = () => received.flatMap((m) => (m.type === 'STEP' ? [m.body.events.map(([id, ev]) => `${id}:${ev.type}`)] : []));
  const submit = (id: string) => peer.write(encodeMessage('SUBMIT', { req: req(id) }));
  return { backend, peer, received, steps, submit, errors };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('serveEngine holds `accepted` for the next frame', () => {
  it('an accepted with no other event is not written until ACCEPTED_HOLD_MS, then alone', async () => {
    const { submit, steps } = await connect();
    await submit('a');
    await vi.advanceTimersByTimeAsync(ACCEPTED_HOLD_MS - 1);
    expect(steps()).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(steps()).toEqual([['a:accepted']]);
  });

  it('leaves in the same STEP frame as the request\'s first delta, and the bound is disarmed', async () => {
    const { backend, submit, steps } = await connect();
    await submit('a');
    await vi.advanceTimersByTimeAsync(ACCEPTED_HOLD_MS / 2);
    expect(steps()).toEqual([]);
    backend.emit('a', delta('x'));
    await vi.advanceTimersByTimeAsync(0);
    expect(steps()).toEqual([['a:accepted', 'a:delta']]);
    await vi.advanceTimersByTimeAsync(2 * ACCEPTED_HOLD_MS);
    expect(steps()).toHaveLength(1);
    backend.emit('a', done);
    await vi.advanceTimersByTimeAsync(0);
    expect(steps()).toEqual([['a:accepted', 'a:delta'], ['a:done']]);
  });

  it('keeps the order of events across streams: an accepted leaves with another stream\'s event', async () => {
    const { backend, submit, steps, received } = await connect();
    await submit('a');
    await submit('b');
    await vi.advanceTimersByTimeAsync(0);
    expect(steps()).toEqual([]);
    // One engine step: b's first token, then a's.
    backend.emit('b', delta('b1'));
    backend.emit('a', delta('a1'));
    await vi.advanceTimersByTimeAsync(0);
    expect(steps()).toEqual([['a:accepted', 'b:accepted', 'b:delta', 'a:delta']]);
    const texts = received.flatMap((m) => (m.type === 'STEP' ? m.body.events.flatMap(([, ev]) => (ev.type === 'delta' ? ev.choices.map((c) => c.text) : [])) : []));
    expect(texts).toEqual(['b1', 'a1']);
    // A later request's accepted is held on its own bound, from its own arrival.
    await vi.advanceTimersByTimeAsync(ACCEPTED_HOLD_MS / 2);
    await submit('c');
    await vi.advanceTimersByTimeAsync(ACCEPTED_HOLD_MS - 1);
    expect(steps()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(steps()).toEqual([['a:accepted', 'b:accepted', 'b:delta', 'a:delta'], ['c:accepted']]);
  });

  it('an abort before accepted left: the request ends, its accepted and done leave together at once', async () => {
    const { peer, submit, steps, received } = await connect();
    await submit('a');
    await vi.advanceTimersByTimeAsync(0);
    await peer.write(encodeMessage('ABORT', { id: 'a', cid: 1 }));
    await vi.advanceTimersByTimeAsync(0);
    expect(steps()).toEqual([['a:accepted', 'a:done']]);
    expect(received.map((m) => m.type)).toEqual(['STEP', 'REPLY']);
  });

  it('a connection that closes with accepted events held writes nothing more and reports nothing', async () => {
    const { peer, submit, steps, errors } = await connect();
    await submit('a');
    await vi.advanceTimersByTimeAsync(0);
    peer.close();
    await vi.advanceTimersByTimeAsync(2 * ACCEPTED_HOLD_MS);
    expect(steps()).toEqual([]);
    expect(errors).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
