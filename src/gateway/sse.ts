// Server-sent events for streamed completions: `data: <json>\n\n` per chunk, then `data: [DONE]\n\n`.
// Pull-based: the next chunk is produced only when the client's connection wants more, so a slow
// client slows its own engine request (through the engine's backpressure) and nobody else's.
// A client that goes away cancels the body → `onCancel` (the run group's cancel: engine abort).

const encoder = new TextEncoder();

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * `chunks` yields JSON-serialisable payloads and must not throw (errors become payloads upstream).
 * `onChunk` runs after each chunk is handed to the response (the request record's trace mark).
 */
export function sseResponse(
  chunks: AsyncGenerator<unknown, void, undefined>,
  onCancel: () => void,
  headers: Record<string, string> = {},
  onChunk?: () => void,
): Response {
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await chunks.next();
        if (done) {
          controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(value)}\n\n`));
        onChunk?.();
      } catch (err) {
        // Only a bug gets here (chunk generators turn failures into error payloads); end the stream.
        onCancel();
        controller.error(err);
      }
    },
    async cancel() {
      onCancel();
      await chunks.return(undefined);
    },
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...headers } });
}
