// The byte transport the framed protocol runs over: a duplex, ordered, reliable byte pipe.
// Implementations: node:net sockets (./node-socket.ts), web streams such as Workers' connect()
// (./web-stream-transport.ts) and the in-memory pair below (tests, in-process wiring).

export interface ByteTransport {
  /**
   * Queues bytes in order. Resolves when the transport accepted them without exceeding its buffer
   * (Node: immediately, or after 'drain' when the socket buffer was full) — awaiting it is the
   * backpressure. Rejects once the transport is closed.
   */
  write(bytes: Uint8Array): Promise<void>;
  /** Registers the (single) data listener. Chunks arrive split arbitrarily. */
  onData(listener: (chunk: Uint8Array) => void): void;
  /** Registers the (single) close listener; called exactly once, with the error if the close was abnormal. */
  onClose(listener: (error?: Error) => void): void;
  /** Closes both directions. Idempotent; triggers onClose. */
  close(): void;
}

/** Opens a fresh transport; the framed client calls it again to reconnect. */
export type Connector = () => Promise<ByteTransport>;

/**
 * Two connected in-memory transports. Delivery is asynchronous (a microtask per write), like a socket,
 * so neither side re-enters the other synchronously. `write` always resolves at once (no buffer limit).
 */
export function createTransportPair(): [ByteTransport, ByteTransport] {
  const a = new MemoryEnd();
  const b = new MemoryEnd();
  a.peer = b;
  b.peer = a;
  return [a, b];
}

class MemoryEnd implements ByteTransport {
  peer: MemoryEnd | null = null;
  private dataListener: ((chunk: Uint8Array) => void) | null = null;
  private closeListener: ((error?: Error) => void) | null = null;
  private pending: Uint8Array[] = [];
  private closed = false;
  private closing = false;

  write(bytes: Uint8Array): Promise<void> {
    if (this.closed || this.closing) return Promise.reject(new Error('transport closed'));
    const peer = this.peer!;
    const copy = bytes.slice();
    queueMicrotask(() => peer.deliver(copy));
    return Promise.resolve();
  }

  private deliver(chunk: Uint8Array): void {
    if (this.closed) return;
    if (this.dataListener) this.dataListener(chunk);
    else this.pending.push(chunk);
  }

  onData(listener: (chunk: Uint8Array) => void): void {
    this.dataListener = listener;
    const queued = this.pending;
    this.pending = [];
    for (const chunk of queued) listener(chunk);
  }

  onClose(listener: (error?: Error) => void): void {
    this.closeListener = listener;
    if (this.closed) queueMicrotask(() => listener());
  }

  close(): void {
    if (this.closed || this.closing) return;
    this.closing = true;
    // Data already written by the peer is still delivered first (microtask order), like a socket FIN.
    queueMicrotask(() => this.finish());
    const peer = this.peer;
    if (peer) queueMicrotask(() => peer.finish());
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.closeListener?.();
  }
}
