// The push side of a stream, as the sidecar serves it: a backend hands each request's events to a
// callback as the engine makes them (all of one engine step within one step callback), so serveEngine
// can send one STEP frame per step per connection, and takes the gateway's credit (./flow.ts) back.
// EngineHost implements it natively (pausing the engine when a window is full); `pushFromIterable`
// adapts any pull-based EngineClient-like backend (test doubles), where not pulling is the pause.

import { EngineError, type SubmitRequest } from './engine-client.js';
import { eventUnits, streamWindow } from './flow.js';
import type { WireError, WireEvent } from './messages.js';
import type { EngineBackend } from './serve-engine.js';

export interface PushedStream {
  /** The consumer has taken `consumed` units of this stream in all (cumulative; never decreases). */
  credit(consumed: number): void;
  /** The consumer is gone (ABORT, connection closed): end the request; its last events may follow. */
  abort(): void;
}

/** Receives a stream's events: `accepted`, `delta`s, then `done`; or one `error`. */
export type Emit = (ev: WireEvent) => void;

export interface PushBackend {
  /**
   * Starts a request; its events go to `emit` synchronously as they are made. Throws EngineError when
   * the request is refused up front (nothing is emitted then).
   */
  open(req: SubmitRequest, emit: Emit): PushedStream;
}

/**
 * A PushedStream over `backend.stream()`: pulls events while fewer than the request's window of units
 * are outstanding, and stops pulling (which is a pull-based backend's pause) until credit comes back.
 * `settled` resolves when the pump has ended; failures are emitted as an `error` event.
 */
export function pushFromIterable(backend: EngineBackend, req: SubmitRequest, emit: Emit): PushedStream & { settled: Promise<void> } {
  const ctl = new AbortController();
  const window = streamWindow(req.n);
  let sent = 0;
  let consumed = 0;
  let wake: (() => void) | null = null;
  const resume = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const settled = (async () => {
    try {
      for await (const ev of backend.stream(req, ctl.signal)) {
        emit(ev);
        sent += eventUnits(ev);
        while (sent - consumed >= window && !ctl.signal.aborted) await new Promise<void>((r) => (wake = r));
      }
    } catch (err) {
      emit({ type: 'error', ...toWireError(err) });
    }
  })();
  return {
    settled,
    credit(c) {
      consumed = Math.max(consumed, c);
      if (sent - consumed < window) resume();
    },
    abort() {
      ctl.abort();
      resume();
    },
  };
}

export function toWireError(err: unknown): WireError {
  if (err instanceof EngineError) return { code: err.code, message: err.message, param: err.param };
  return { code: 'INTERNAL', message: err instanceof Error ? err.message : String(err), param: null };
}
