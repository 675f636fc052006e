// An unbounded single-consumer queue of one request's wire events. The connection's read loop pushes
// without ever waiting, so a slow consumer of one stream cannot stall the others sharing the socket.
// NOTE: memory per request is bounded by what the engine generates for it (≤ max_model_len tokens).

export class EventQueue<T> {
  private items: T[] = [];
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
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  get size(): number {
    return this.items.length;
  }
}
