// A single-consumer queue of one request's events. The producer (a connection's read loop, the engine's
// step callback) pushes without ever waiting, so a slow consumer of one stream cannot stall the others.
// NOTE: unbounded here; what a stream can have queued is bounded by its flow-control window
// (./flow.ts): the sidecar stops sending, and the engine stops generating, once it is full.

export class EventQueue<T> {
  private items: T[] = [];
  private head = 0; // items[head..] are queued (a moving head: shift() is O(n))
  private waiter: ((item: T) => void) | null = null;

  push(item: T): void {
    const w = this.waiter;
    if (w) {
      this.waiter = null;
      w(item);
    } else {
      this.items.push(item);
    }
  }

  /** Resolves with the next item (in push order). Only one pending `next` at a time. */
  next(): Promise<T> {
    const item = this.take();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  /** The next item if one is queued now (not taken), else undefined. */
  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  /** Takes the next item if one is queued now, else undefined. */
  take(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head++]!;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 64 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  get size(): number {
    return this.items.length - this.head;
  }
}
