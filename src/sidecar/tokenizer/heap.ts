// A binary min-heap of integer handles ordered by a caller-supplied `before(a, b)`.
// Both BPE merge loops keep their candidate pairs in one of these; the pair data lives in the caller's
// typed arrays and the heap only moves int32 handles (no per-pair objects: the encoder's hot loop).

export class HandleHeap {
  private items: Int32Array;
  private n = 0;

  constructor(
    private readonly before: (a: number, b: number) => boolean,
    capacity = 64,
  ) {
    this.items = new Int32Array(capacity);
  }

  get size(): number {
    return this.n;
  }

  clear(): void {
    this.n = 0;
  }

  push(h: number): void {
    if (this.n === this.items.length) {
      const grown = new Int32Array(this.items.length * 2);
      grown.set(this.items);
      this.items = grown;
    }
    const items = this.items;
    let i = this.n++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      if (!this.before(h, p)) break;
      items[i] = p;
      i = parent;
    }
    items[i] = h;
  }

  /** Removes and returns the first handle; -1 when empty. */
  pop(): number {
    if (this.n === 0) return -1;
    const items = this.items;
    const top = items[0]!;
    const last = items[--this.n]!;
    const n = this.n;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && this.before(items[r]!, items[l]!)) c = r;
      if (!this.before(items[c]!, last)) break;
      items[i] = items[c]!;
      i = c;
    }
    items[i] = last;
    return top;
  }
}
