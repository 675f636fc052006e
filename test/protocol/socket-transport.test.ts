// socketTransport's backpressure: writes made while the kernel buffer is full all wait on one drain
// promise (the socket gets one 'drain' and one 'close' listener of ours, not one per write: 512
// streams used to print MaxListenersExceededWarning), and resolve once the peer reads again.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { socketTransport } from '../../src/protocol/node-socket.js';

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

async function pair(): Promise<{ client: net.Socket; server: net.Socket }> {
  const srv = net.createServer();
  const accepted = new Promise<net.Socket>((resolve) => srv.once('connection', resolve));
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const client = net.connect((srv.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => client.once('connect', resolve));
  const server = await accepted;
  cleanup.push(() => {
    client.destroy();
    server.destroy();
    srv.close();
  });
  return { client, server };
}

describe('socketTransport', () => {
  it('many writes against a full buffer share one drain listener and all resolve when the peer reads', async () => {
    const { client, server } = await pair();
    server.pause(); // the peer reads nothing: the buffers fill
    const drainBefore = client.listenerCount('drain');
    const closeBefore = client.listenerCount('close');
    const t = socketTransport(client);
    const chunk = new Uint8Array(256 * 1024);
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 64; i++) writes.push(t.write(chunk));
    expect(client.writableNeedDrain).toBe(true);
    expect(client.listenerCount('drain') - drainBefore).toBe(1);
    expect(client.listenerCount('close') - closeBefore).toBe(1);
    let received = 0;
    server.on('data', (d: Buffer) => (received += d.length));
    server.resume();
    await Promise.all(writes);
    expect(client.listenerCount('drain') - drainBefore).toBe(1);
    await new Promise<void>((resolve) => {
      const check = () => (received === 64 * chunk.length ? resolve() : server.once('data', check));
      check();
    });
  });

  it('writes waiting for drain reject when the socket closes', async () => {
    const { client, server } = await pair();
    server.pause();
    const t = socketTransport(client);
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 64; i++) writes.push(t.write(new Uint8Array(256 * 1024)));
    client.destroy();
    await expect(writes[writes.length - 1]).rejects.toThrow(/closed/);
    await expect(t.write(new Uint8Array(1))).rejects.toThrow(/closed/);
  });
});
