// ByteTransport over a pair of web streams — the shape of Cloudflare Workers' `connect()` socket
// (`cloudflare:sockets`: {readable, writable, closed, close()}) and of any WHATWG duplex. Runtime-
// agnostic; the Workers adapter does `new FramedEngineClient({connect: async () =>
// webStreamTransport(connect({hostname, port})), secret})`.

import type { ByteTransport } from './transport.js';

export interface WebSocketLike {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): Promise<void> | void;
}

export function webStreamTransport(socket: WebSocketLike): ByteTransport {
  const writer = socket.writable.getWriter();
  let onData: ((chunk: Uint8Array) => void) | null = null;
  let onClose: ((error?: Error) => void) | null = null;
  let closed = false;
  let closeError: Error | undefined;
  const finish = (err?: Error) => {
    if (closed) return;
    closed = true;
    closeError = err;
    onClose?.(err);
  };
  const pump = async () => {
    const reader = socket.readable.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        onData?.(value);
      }
      finish();
    } catch (err) {
      finish(err instanceof Error ? err : new Error(String(err)));
    }
  };
  return {
    // `writer.ready` is the stream's backpressure signal.
    async write(bytes) {
      if (closed) throw new Error('transport closed');
      await writer.ready;
      await writer.write(bytes);
    },
    onData(listener) {
      onData = listener;
      void pump(); // pump() never rejects: failures end in finish(err)
    },
    onClose(listener) {
      onClose = listener;
      if (closed) listener(closeError);
    },
    close() {
      if (closed) return;
      void Promise.resolve(socket.close()).catch(() => undefined);
      finish();
    },
  };
}
