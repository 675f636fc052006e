// Server-sent events for streamed completions: `data: <json>\n\n` per chunk, then `data: [DONE]\n\n`.
// Pull-based: the next chunk is produced only when the client's connection wants more, so a slow
// client slows its own engine request (through the engine's backpressure) and nobody else's.
// A client that goes away cancels the body → `onCancel` (the run group's cancel: engine abort).
// A client that stays connected but reads nothing: the runtime stops pulling once its socket buffer is
// full, the engine request's flow-control window fills (src/protocol/flow.ts) and the engine pauses it;
// when no pull has come for the stall timeout (a chunk waiting all along), the stream is aborted: the
// engine request is cancelled (its KV blocks freed) and the response errored, which closes the
// connection (nginx's send_timeout, for a stream).

import type { RouteDeps } from './deps.js';

const encoder = new TextEncoder();

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** The stall guard of a stream: after `timeoutMs` without a pull while a chunk waits, `onStall` and abort. */
export interface StallGuard {
  timeoutMs: number;
  onStall: (stalledMs: number) => void;
}

/** The app's stall guard for request `reqId` (none when the timeout is 0). */
export function stallGuard(deps: Pick<RouteDeps, 'streamStallTimeoutMs' | 'onStreamStall'>, reqId: string): StallGuard | undefined {
  if (!(deps.streamStallTimeoutMs > 0)) return undefined;
  return { timeoutMs: deps.streamStallTimeoutMs, onStall: (ms) => deps.onStreamStall(reqId, ms) };
}

/**
 * `chunks` yields JSON-serialisable payloads and must not throw (errors become payloads upstream).
 * `onChunk` runs after each chunk is handed to the response (the request record's trace mark).
 */
export function sseResponse(
  chunks: AsyncGenerator<unknown, void, undefined>,
  onCancel: () => void,
  headers: Record<string, string> = {},
  onChunk?: () => void,
  stall?: StallGuard,
): Response {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  let waitingSince = -1; // when a chunk was enqueued with no pull since; -1: a pull is in progress
  let timer: ReturnType<typeof setTimeout> | null = null;
  let ended = false;
  // One timer per stream, re-armed at most once per timeout (not per chunk).
  const check = () => {
    timer = null;
    if (ended || waitingSince < 0 || !stall) return;
    const idle = performance.now() - waitingSince;
    if (idle < stall.timeoutMs) {
      timer = setTimeout(check, stall.timeoutMs - idle);
      return;
    }
    ended = true;
    stall.onStall(idle);
    onCancel();
    ctl.error(new Error(`stream stalled: the client read nothing for ${Math.round(idle)} ms`));
    void chunks.return(undefined).catch(() => undefined);
  };
  const stop = () => {
    ended = true;
    if (timer) clearTimeout(timer);
    timer = null;
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      ctl = controller;
    },
    async pull(controller) {
      waitingSince = -1;
      try {
        const { done, value } = await chunks.next();
        if (ended) return;
        if (done) {
          stop();
          controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(value)}\n\n`));
        onChunk?.();
        waitingSince = performance.now();
        if (stall && stall.timeoutMs > 0 && timer === null) timer = setTimeout(check, stall.timeoutMs);
      } catch (err) {
        // Only a bug gets here (chunk generators turn failures into error payloads); end the stream.
        stop();
        onCancel();
        controller.error(err);
      }
    },
    async cancel() {
      stop();
      onCancel();
      await chunks.return(undefined);
    },
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...headers } });
}
