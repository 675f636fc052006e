// A JSON response body written in slices, for answers that carry millions of values (/tokenize of a
// 4 MB prompt: its ids, and token_strs when asked). Built whole, such a body is one JSON.stringify and
// one write that hold this thread for as long as they take, and every stream served by it waits (issue
// #26). Here each slice of at most SLICE values is formatted when the HTTP layer pulls the next chunk,
// after a macrotask, so other requests' I/O runs between slices.
//
// Shape: `{...head, [key]: [values], ...}` with the arrays after the head's fields, in the order given.
// NOTE: ids are formatted by hand into bytes: JSON.stringify or Array.prototype.join of a slice build
// strings per element and ran several times slower.

/** Values formatted per slice; a slice of ids is at most ~200 KB of text. */
export const SLICE = 16 * 1024;

export type SlicedArray = { key: string; ids: ArrayLike<number> } | { key: string; strings: readonly string[] };

const encoder = new TextEncoder();
const COMMA = 0x2c;

/** The body, as a stream; `head` is the object's scalar fields (JSON.stringify'd as they are). */
export function slicedJsonBody(head: Record<string, unknown>, arrays: SlicedArray[]): ReadableStream<Uint8Array> {
  const parts = plan(head, arrays);
  let i = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctl) {
        if (i > 0) await new Promise((r) => setTimeout(r, 0));
        const next = parts[i++];
        if (next === undefined) ctl.close();
        else ctl.enqueue(next());
      },
    },
    { highWaterMark: 0 },
  );
}

/** The body as a list of chunk makers, each called once, in order. */
function plan(head: Record<string, unknown>, arrays: SlicedArray[]): (() => Uint8Array)[] {
  const parts: (() => Uint8Array)[] = [];
  let open = JSON.stringify(head).slice(0, -1); // "{...fields" without its closing brace
  let first = open.length === 1; // `{` only: no field before the first array
  for (const a of arrays) {
    const n = 'ids' in a ? a.ids.length : a.strings.length;
    open += `${first ? '' : ','}${JSON.stringify(a.key)}:[`;
    first = false;
    const prefix = open;
    parts.push(() => encoder.encode(prefix));
    for (let at = 0; at < n; at += SLICE) {
      const end = Math.min(n, at + SLICE);
      parts.push('ids' in a ? () => formatIds(a.ids, at, end) : () => encoder.encode((at > 0 ? ',' : '') + JSON.stringify(a.strings.slice(at, end)).slice(1, -1)));
    }
    open = ']';
  }
  parts.push(() => encoder.encode(`${open}}`));
  return parts;
}

/** ids[start, end) as decimal integers separated by commas (one leading comma unless start is 0). */
export function formatIds(ids: ArrayLike<number>, start: number, end: number): Uint8Array {
  const out = new Uint8Array((end - start) * 12); // "-2147483648," at most
  let p = 0;
  for (let i = start; i < end; i++) {
    if (i > 0) out[p++] = COMMA;
    let v = ids[i]!;
    if (!Number.isInteger(v)) throw new Error(`not an integer id: ${v}`);
    if (v < 0) {
      out[p++] = 0x2d;
      v = -v;
    }
    let d = 1;
    while (d * 10 <= v) d *= 10;
    for (; d >= 1; d /= 10) {
      const q = Math.floor(v / d);
      out[p++] = 0x30 + q;
      v -= q * d;
    }
  }
  return out.subarray(0, p);
}
