// Concurrent callers of the same work share one run of it: while a run for `key` is pending, callers
// get its promise instead of starting another; the next call after it settles starts a fresh run.
// Used where a burst of identical reads (a pipelining client's /metrics, many scrapers at once) would
// otherwise queue one engine call and one render each, all answered in the same event-loop turn.
// Keys are objects (an engine client), held weakly. A hand-written map: the libraries for this
// (p-memoize and the like) cache results past settling, which a scrape must not.

export class SingleFlight<K extends object, V> {
  private readonly pending = new WeakMap<K, Promise<V>>();

  run(key: K, work: () => Promise<V>): Promise<V> {
    const running = this.pending.get(key);
    if (running) return running;
    const p = work().finally(() => this.pending.delete(key));
    this.pending.set(key, p);
    return p;
  }

  /** Whether a run for `key` is pending. */
  has(key: K): boolean {
    return this.pending.has(key);
  }
}
