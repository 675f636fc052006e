// Node socket glue for the engine protocol: client connectors and servers over Unix sockets and TCP.
// NOTE: the ONE file in src/protocol that imports node:* (node:net, node:fs/promises); everything else
// here is runtime-agnostic. Workers use ./web-stream-transport.ts with cloudflare:sockets connect().
//
// Unix sockets are chmod 0600 after listen (only the owning user may connect); put them in a 0700
// directory too, since the file briefly has the umask's mode between bind and chmod. TCP servers
// require a shared secret: the port is reachable by anyone who can route to it.

import { chmod, lstat, unlink } from 'node:fs/promises';
import net from 'node:net';
import { FramedEngineClient, type FramedEngineClientOptions } from './framed-client.js';
import { serveEngine, type EngineBackend, type ServeEngineOptions } from './serve-engine.js';
import type { ByteTransport, Connector } from './transport.js';

/**
 * Wraps a connected socket. write() resolves at once, or after 'drain' when the kernel buffer is full.
 * Every write made while the buffer is full waits on the same drain promise: one 'drain' and one
 * 'close' listener per transport, never one per write.
 */
export function socketTransport(socket: net.Socket): ByteTransport {
  let closeListener: ((error?: Error) => void) | null = null;
  let closeError: Error | undefined;
  let closed = false;
  let drained: { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } | null = null;
  socket.setNoDelay?.(true);
  socket.on('error', (err) => {
    closeError = err;
  });
  socket.on('drain', () => {
    const d = drained;
    drained = null;
    d?.resolve();
  });
  socket.on('close', () => {
    closed = true;
    const d = drained;
    drained = null;
    d?.reject(new Error('socket closed before drain'));
    closeListener?.(closeError);
  });
  return {
    write(bytes) {
      if (closed || socket.destroyed) return Promise.reject(new Error('socket closed'));
      if (socket.write(bytes)) return Promise.resolve();
      if (!drained) {
        let resolve!: () => void;
        let reject!: (e: Error) => void;
        const promise = new Promise<void>((res, rej) => {
          resolve = res;
          reject = rej;
        });
        promise.catch(() => undefined); // a writer that stopped waiting must not leave an unhandled rejection
        drained = { promise, resolve, reject };
      }
      return drained.promise;
    },
    onData(listener) {
      socket.on('data', (chunk: Buffer) => listener(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length)));
    },
    onClose(listener) {
      closeListener = listener;
      if (closed) listener(closeError);
    },
    close() {
      socket.destroy();
    },
  };
}

function connectSocket(options: net.NetConnectOpts): Promise<ByteTransport> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(options);
    const onError = (err: Error) => reject(err);
    socket.once('error', onError);
    socket.once('connect', () => {
      socket.off('error', onError);
      resolve(socketTransport(socket));
    });
  });
}

export const unixConnector = (path: string): Connector => () => connectSocket({ path });
export const tcpConnector = (host: string, port: number): Connector => () => connectSocket({ host, port });

type ClientOptions = Omit<FramedEngineClientOptions, 'connect'>;
export function createUnixEngineClient(path: string, opts: ClientOptions = {}): FramedEngineClient {
  return new FramedEngineClient({ ...opts, connect: unixConnector(path) });
}
export function createTcpEngineClient(host: string, port: number, secret: string, opts: ClientOptions = {}): FramedEngineClient {
  return new FramedEngineClient({ ...opts, secret, connect: tcpConnector(host, port) });
}

export interface EngineSocketServer {
  /** Unix socket path, or the bound TCP port (useful with port 0). */
  readonly address: string | { host: string; port: number };
  /** Stops accepting, closes every connection (their requests get aborted) and waits for them to settle. */
  close(): Promise<void>;
}

async function serve(server: net.Server, backend: EngineBackend, opts: ServeEngineOptions): Promise<() => Promise<void>> {
  const conns = new Set<{ socket: net.Socket; done: Promise<void> }>();
  server.on('connection', (socket) => {
    const served = serveEngine(socketTransport(socket), backend, opts);
    const entry = { socket, done: served.done };
    conns.add(entry);
    void served.done.then(() => conns.delete(entry));
  });
  return async () => {
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const { socket } of conns) socket.destroy();
    await Promise.all([stopped, ...[...conns].map((c) => c.done)]);
  };
}

function listen(server: net.Server, options: net.ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Removes a socket file left by a dead server; refuses if a live server still answers on it. */
async function clearStaleSocket(path: string): Promise<void> {
  const st = await lstat(path).catch(() => null);
  if (!st) return;
  if (!st.isSocket()) throw new Error(`${path} exists and is not a socket`);
  const live = await new Promise<boolean>((resolve) => {
    const probe = net.connect({ path });
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw new Error(`another engine is already listening on ${path}`);
  await unlink(path);
}

export async function listenUnix(path: string, backend: EngineBackend, opts: ServeEngineOptions = {}): Promise<EngineSocketServer> {
  await clearStaleSocket(path);
  const server = net.createServer();
  const stop = await serve(server, backend, opts);
  await listen(server, { path });
  await chmod(path, 0o600);
  return { address: path, close: stop };
}

export async function listenTcp(
  host: string,
  port: number,
  backend: EngineBackend,
  opts: ServeEngineOptions & { secret: string },
): Promise<EngineSocketServer> {
  if (!opts.secret) throw new Error('a TCP engine server requires a shared secret');
  const server = net.createServer();
  const stop = await serve(server, backend, opts);
  await listen(server, { host, port });
  const addr = server.address() as net.AddressInfo;
  return { address: { host: addr.address, port: addr.port }, close: stop };
}
