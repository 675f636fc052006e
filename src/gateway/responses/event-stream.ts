// Server-sent events as the Responses API streams them: `event: <type>\ndata: <json>\n\n` per event and
// no `[DONE]` at the end (the terminal event is response.completed / .incomplete / .failed). ../sse.ts
// writes chat's `data:`-only frames with `[DONE]`; the pull-based shape is the same: the next event is
// produced only when the connection wants more, and a client that goes away cancels the generator.

import { SSE_HEADERS } from '../sse.js';

const encoder = new TextEncoder();

/** `events` must not throw (failures are events); each has a string `type`. */
export function eventStreamResponse(events: AsyncGenerator<{ type: string }, void, undefined>, onCancel: () => void, onEvent?: () => void): Response {
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await events.next();
        if (done) {
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(`event: ${value.type}\ndata: ${JSON.stringify(value)}\n\n`));
        onEvent?.();
      } catch (err) {
        // Only a bug gets here (failures are events); end the stream.
        onCancel();
        controller.error(err);
      }
    },
    async cancel() {
      onCancel();
      await events.return(undefined);
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}
