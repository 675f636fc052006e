// The subset of Cloudflare Workers' `cloudflare:sockets` module that adapters/workers.ts uses
// (runtime-provided; no package). Shape: https://developers.cloudflare.com/workers/runtime-apis/tcp-sockets/
declare module 'cloudflare:sockets' {
  export interface SocketAddress {
    hostname: string;
    port: number;
  }
  export interface SocketOptions {
    secureTransport?: 'off' | 'on' | 'starttls';
    allowHalfOpen?: boolean;
  }
  export interface Socket {
    readonly readable: ReadableStream<Uint8Array>;
    readonly writable: WritableStream<Uint8Array>;
    /** Resolves once connected; rejects when the connection cannot be made. */
    readonly opened: Promise<unknown>;
    readonly closed: Promise<void>;
    close(): Promise<void>;
  }
  export function connect(address: SocketAddress | string, options?: SocketOptions): Socket;
}
