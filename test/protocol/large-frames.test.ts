// Large frames (a multi-megabyte prompt, a million packed ids) on both ends of the engine protocol: a
// large payload is written as header + payload instead of being copied into one frame buffer, and the
// server handles the frames after a large one on a later event-loop turn (issue #26: whole-payload
// passes run back to back froze every stream of the sidecar).
import { describe, expect, it } from 'vitest';
import type { TokenizeRequest } from '../../src/protocol/engine-client.js';
import { encodeFrameParts, FrameDecoder, SPLIT_FRAME_BYTES, writeParts } from '../../src/protocol/framing.js';
import { decodeMessage, encodeMessage, encodeMessageParts, PROTOCOL_VERSION } from '../../src/protocol/messages.js';
import { LARGE_FRAME_BYTES, serveEngine } from '../../src/protocol/serve-engine.js';
import { createTransportPair } from '../../src/protocol/transport.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';
import { concatBytes } from '../doubles/bytes.js';

const concat = concatBytes;

describe('encodeFrameParts / writeParts', () => {
  it('a small payload is one frame; a large one is its header then the payload itself, the same bytes in all', () => {
    const small = new Uint8Array(SPLIT_FRAME_BYTES).fill(7);
    expect(encodeFrameParts(0x23, small)).toHaveLength(1);
    const large = new Uint8Array(SPLIT_FRAME_BYTES + 1).fill(9);
    const parts = encodeFrameParts(0x23, large);
    expect(parts).toHaveLength(2);
    expect(parts[1]).toBe(large); // not copied
    const [frame] = new FrameDecoder().push(concat(parts));
    expect(frame!.type).toBe(0x23);
    expect(frame!.payload).toEqual(large);
    expect(() => encodeFrameParts(0x23, large, SPLIT_FRAME_BYTES)).toThrow(/exceeds/);
  });

  it('encodeMessageParts of a large message decodes to what encodeMessage gives', () => {
    const body = { cid: 3, req: { prompt: 'é'.repeat(SPLIT_FRAME_BYTES), addSpecialTokens: true, addGenerationPrompt: false } };
    const parts = encodeMessageParts('TOKENIZE', body);
    expect(parts).toHaveLength(2);
    expect(concat(parts)).toEqual(encodeMessage('TOKENIZE', body));
  });

  it('a payload given as parts: each part uncopied when large, joined into one frame when small', () => {
    const head = Uint8Array.of(1, 2, 3);
    const tail = new Uint8Array(SPLIT_FRAME_BYTES).fill(5);
    const parts = encodeFrameParts(0x31, [head, tail]);
    expect(parts).toHaveLength(3);
    expect(parts[1]).toBe(head);
    expect(parts[2]).toBe(tail);
    expect(new FrameDecoder().push(concat(parts))[0]!.payload).toEqual(concat([head, tail]));
    const joined = encodeFrameParts(0x31, [head, Uint8Array.of(4)]);
    expect(joined).toHaveLength(1);
    expect(new FrameDecoder().push(joined[0]!)[0]).toEqual({ type: 0x31, payload: Uint8Array.of(1, 2, 3, 4) });
    expect(() => encodeFrameParts(0x31, [head, tail], SPLIT_FRAME_BYTES)).toThrow(/exceeds/);
  });

  it("a large REPLY_IDS is written with the ids' own memory as its last part (no packed copy), the same bytes as encodeMessage", () => {
    const ids = Int32Array.from({ length: SPLIT_FRAME_BYTES / 4 + 1 }, (_, i) => i - 7); // just past SPLIT_FRAME_BYTES
    const body = { cid: 9, ok: true as const, result: { maxModelLen: 64 }, ids };
    const parts = encodeMessageParts('REPLY_IDS', body);
    expect(parts).toHaveLength(3);
    expect(parts[2]!.buffer).toBe(ids.buffer);
    expect(Buffer.from(concat(parts)).equals(encodeMessage('REPLY_IDS', body))).toBe(true);
    const msg = decodeMessage(new FrameDecoder().push(concat(parts))[0]!);
    expect(msg.type === 'REPLY_IDS' && Array.from(msg.body.ids)).toEqual(Array.from(ids));
  });

  it('writeParts writes in order and settles as the last write; a failed earlier part leaves no unhandled rejection', async () => {
    const seen: number[] = [];
    await writeParts(async (b) => void seen.push(b[0]!), [Uint8Array.of(1), Uint8Array.of(2)]);
    expect(seen).toEqual([1, 2]);
    const failing = writeParts(() => Promise.reject(new Error('socket closed')), [Uint8Array.of(1), Uint8Array.of(2)]);
    await expect(failing).rejects.toThrow('socket closed');
  });
});

describe('serveEngine: frames after a large one wait for a later event-loop turn', () => {
  it('two large TOKENIZE frames in one chunk are handled on different turns, in order, the small one after them', async () => {
    const backend = new FakeEngineClient();
    let turn = 0;
    let ticking = true;
    const ticker = (async () => {
      while (ticking) {
        await new Promise((r) => setTimeout(r, 0));
        turn++;
      }
    })();
    const handled: [string, number][] = [];
    backend.tokenize = async (req: TokenizeRequest) => {
      handled.push([req.prompt!.slice(0, 1), turn]);
      return { tokens: [1], maxModelLen: 8 };
    };
    const health = backend.health.bind(backend);
    backend.health = () => (handled.push(['health', turn]), health());
    const [a, b] = createTransportPair();
    serveEngine(b, backend);
    const replies: unknown[] = [];
    const decoder = new FrameDecoder();
    const allReplied = new Promise<void>((resolve) =>
      a.onData((chunk) => {
        for (const f of decoder.push(chunk)) replies.push(decodeMessage(f).type);
        if (replies.filter((t) => t !== 'HELLO_OK').length === 3) resolve();
      }),
    );
    const big = (c: string) => ({ prompt: c.repeat(LARGE_FRAME_BYTES + 1), addSpecialTokens: false, addGenerationPrompt: false });
    await a.write(encodeMessage('HELLO', { version: PROTOCOL_VERSION }));
    await a.write(concat([encodeMessage('TOKENIZE', { cid: 1, req: big('x') }), encodeMessage('TOKENIZE', { cid: 2, req: big('y') }), encodeMessage('HEALTH', { cid: 3 })]));
    await allReplied;
    ticking = false;
    await ticker;
    expect(handled.map(([what]) => what)).toEqual(['x', 'y', 'health']);
    expect(handled[1]![1]).toBeGreaterThan(handled[0]![1]);
    expect(handled[2]![1]).toBeGreaterThan(handled[1]![1]);
  });
});
