// serveEngine before the peer has authenticated: frames are capped at PRE_AUTH_MAX_FRAME_BYTES and a
// peer that sends no valid HELLO is disconnected after the handshake timeout. The server's side of an
// in-memory pair is wrapped to count what it was handed, so "cut off after a few KiB" is a byte count.
// The same attacks over real TCP against a running sidecar: test/cli/abuse-engine.e2e.test.ts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FramedEngineClient } from '../../src/protocol/framed-client.js';
import { FRAME_HEADER_BYTES } from '../../src/protocol/framing.js';
import { encodeMessage, MsgType, PROTOCOL_VERSION } from '../../src/protocol/messages.js';
import { PRE_AUTH_MAX_FRAME_BYTES, serveEngine } from '../../src/protocol/serve-engine.js';
import { createTransportPair, type ByteTransport } from '../../src/protocol/transport.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

/** The server's end of a pair, counting the bytes delivered to it and resolving `closed` on close. */
function countingServerEnd(inner: ByteTransport) {
  let received = 0;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const transport: ByteTransport = {
    write: (b) => inner.write(b),
    onData: (listener) =>
      inner.onData((chunk) => {
        received += chunk.length;
        listener(chunk);
      }),
    onClose: (listener) =>
      inner.onClose((err) => {
        resolveClosed();
        listener(err);
      }),
    close: () => inner.close(),
  };
  return { transport, closed, received: () => received };
}

/** A 16 MiB HELLO header and then its payload, 4 KiB per write, until the transport refuses writes. */
async function hugeHello(peer: ByteTransport, sendBytes: number): Promise<number> {
  const header = new Uint8Array(FRAME_HEADER_BYTES);
  header[0] = MsgType.HELLO;
  new DataView(header.buffer).setUint32(1, 16 * 1024 * 1024, false);
  let sent = 0;
  try {
    await peer.write(header);
    sent += header.length;
    const chunk = new Uint8Array(4096).fill(0x20);
    while (sent < sendBytes) {
      await peer.write(chunk);
      sent += chunk.length;
      await new Promise((r) => setImmediate(r)); // let the server read between writes, as a socket would
    }
  } catch {
    // refused: the server closed the connection
  }
  return sent;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('serveEngine before authentication', () => {
  it('a declared 16 MiB HELLO is cut off at its header: the server is handed at most one 4 KiB chunk', async () => {
    const [peer, server] = createTransportPair();
    const end = countingServerEnd(server);
    serveEngine(end.transport, new FakeEngineClient(), { secret: 's3cret' });
    const sent = await hugeHello(peer, 15 * 1024 * 1024);
    await end.closed;
    expect(end.received()).toBeLessThanOrEqual(FRAME_HEADER_BYTES + 4096);
    expect(sent).toBeLessThan(64 * 1024); // the peer's writes were refused almost at once
  });

  it('any pre-auth frame past 4 KiB is refused, while an authenticated peer may send large frames', async () => {
    const [peer, server] = createTransportPair();
    const end = countingServerEnd(server);
    serveEngine(end.transport, new FakeEngineClient());
    // A well-formed HELLO whose secret alone is past the cap.
    await peer.write(encodeMessage('HELLO', { version: PROTOCOL_VERSION, secret: 'x'.repeat(PRE_AUTH_MAX_FRAME_BYTES) }));
    await end.closed;

    // Through the real client: HELLO, then a 64 KiB prompt is fine once authenticated.
    const engine = new FakeEngineClient();
    const client = new FramedEngineClient({
      connect: async () => {
        const [a, b] = createTransportPair();
        serveEngine(b, engine, { secret: 'k' });
        return a;
      },
      secret: 'k',
    });
    const { tokens } = await client.tokenize({ prompt: 'a'.repeat(64 * 1024), addSpecialTokens: false, addGenerationPrompt: false });
    expect(tokens.length).toBeGreaterThan(0);
    await client.close();
  });

  it('a peer that never sends HELLO is disconnected after the handshake timeout', async () => {
    const [peer, server] = createTransportPair();
    const end = countingServerEnd(server);
    const started = performance.now();
    serveEngine(end.transport, new FakeEngineClient(), { handshakeTimeoutMs: 100 });
    let peerClosed!: () => void;
    const closedAtPeer = new Promise<void>((r) => (peerClosed = r));
    peer.onClose(() => peerClosed());
    await Promise.all([end.closed, closedAtPeer]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(90);
    expect(end.received()).toBe(0);
  });

  it('an authenticated connection is not subject to the handshake timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const engine = new FakeEngineClient();
    let served!: ReturnType<typeof serveEngine>;
    const client = new FramedEngineClient({
      connect: async () => {
        const [a, b] = createTransportPair();
        served = serveEngine(b, engine, { handshakeTimeoutMs: 30 });
        return a;
      },
    });
    await client.model(); // handshaken
    vi.advanceTimersByTime(10_000); // long past the timeout
    expect((await client.health()).ready).toBe(true);
    expect(client.connections).toBe(1);
    served.close();
    await client.close();
  });
});
