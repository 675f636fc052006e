// SingleFlight: callers of the same key share a pending run; a call after it settles (resolved or
// rejected) starts a new one; keys do not share.
import { describe, expect, it } from 'vitest';
import { SingleFlight } from '../../src/gateway/single-flight.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('SingleFlight', () => {
  it('shares a pending run among callers of its key, and starts anew once it settled', async () => {
    const sf = new SingleFlight<object, string>();
    const key = {};
    const first = deferred<string>();
    let runs = 0;
    const work = (d: { promise: Promise<string> }) => () => (runs++, d.promise);
    const a = sf.run(key, work(first));
    const b = sf.run(key, work(deferred<string>()));
    expect(runs).toBe(1);
    expect(sf.has(key)).toBe(true);
    first.resolve('scrape 1');
    expect(await Promise.all([a, b])).toEqual(['scrape 1', 'scrape 1']);
    expect(sf.has(key)).toBe(false);
    const second = deferred<string>();
    const c = sf.run(key, work(second));
    expect(runs).toBe(2);
    second.resolve('scrape 2');
    expect(await c).toBe('scrape 2');
  });

  it('a rejected run is shared too, and does not stick', async () => {
    const sf = new SingleFlight<object, string>();
    const key = {};
    const failing = deferred<string>();
    const a = sf.run(key, () => failing.promise);
    const b = sf.run(key, () => Promise.resolve('not run'));
    failing.reject(new Error('engine down'));
    await expect(a).rejects.toThrow('engine down');
    await expect(b).rejects.toThrow('engine down');
    expect(await sf.run(key, () => Promise.resolve('next'))).toBe('next');
  });

  it('keys do not share', async () => {
    const sf = new SingleFlight<object, number>();
    const [k1, k2] = [{}, {}];
    const d = deferred<number>();
    const a = sf.run(k1, () => d.promise);
    const b = sf.run(k2, () => Promise.resolve(2));
    d.resolve(1);
    expect(await Promise.all([a, b])).toEqual([1, 2]);
  });
});
