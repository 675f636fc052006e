// Server-sent events for the page's streaming fetch (EventSource cannot POST or send Authorization).
// Contract: yields each event's `data` (multi-line data joined with \n); comments and other fields
// are ignored; a trailing event without its blank line is dropped, as the SSE spec says.

/** Splits complete events off `buf`; returns their data and the unfinished rest. */
export function takeEvents(buf: string): { data: string[]; rest: string } {
  const norm = buf.replace(/\r\n?/g, '\n');
  const parts = norm.split('\n\n');
  const rest = parts.pop() ?? '';
  const data: string[] = [];
  for (const block of parts) {
    const lines = block.split('\n').filter((l) => l === 'data' || l.startsWith('data:'));
    if (lines.length) data.push(lines.map((l) => l.slice(5).replace(/^ /, '')).join('\n'));
  }
  return { data, rest };
}

export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      // NOTE: a lone trailing \r may be half of \r\n; keep it for the next chunk.
      buf += decoder.decode(value, { stream: true });
      const cut = buf.endsWith('\r') ? buf.length - 1 : buf.length;
      const { data, rest } = takeEvents(buf.slice(0, cut));
      buf = rest + buf.slice(cut);
      yield* data;
    }
  } finally {
    // Cancelling (not just releasing) closes the connection when the consumer stops early.
    await reader.cancel().catch(() => undefined);
  }
}
