// The block pool as a plain data structure: exact block ids, reference counts and free order after
// every operation (10 blocks), prefix-cache hits and LRU eviction.
import { describe, expect, it } from 'vitest';
import { native } from '../../src/sidecar/native.js';

const pool = (n = 10) => new (native().BlockPool)(n);

describe('block pool', () => {
  it('allocates from the head of the free queue; a freed block with nothing cached goes back to its head', () => {
    const p = pool();
    expect(p.freeOrder()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect([p.allocate(), p.allocate(), p.allocate()]).toEqual([0, 1, 2]);
    expect(p.numFree()).toBe(7);
    expect(p.refCount(1)).toBe(1);
    p.decref(1);
    expect(p.refCount(1)).toBe(0);
    expect(p.freeOrder()).toEqual([1, 3, 4, 5, 6, 7, 8, 9]);
    p.decref(0);
    expect(p.freeOrder()).toEqual([0, 1, 3, 4, 5, 6, 7, 8, 9]);
    expect(p.allocate()).toBe(0);
  });

  it('counts references: a shared block is free only when the last holder lets go', () => {
    const p = pool();
    const b = p.allocate();
    p.incref(b);
    p.incref(b);
    expect(p.refCount(b)).toBe(3);
    p.decref(b);
    p.decref(b);
    expect(p.numFree()).toBe(9);
    expect(p.freeOrder()).not.toContain(b);
    p.decref(b);
    expect(p.numFree()).toBe(10);
    expect(p.freeOrder()[0]).toBe(b);
  });

  it('runs dry without crashing', () => {
    const p = pool(3);
    expect([p.allocate(), p.allocate(), p.allocate(), p.allocate()]).toEqual([0, 1, 2, -1]);
    expect(p.numFree()).toBe(0);
  });

  it('serves prefix-cache hits from free blocks and evicts least recently freed first', () => {
    const p = pool(4);
    const [a, b, c] = [p.allocate(), p.allocate(), p.allocate()];
    p.setHash(a, 111n);
    p.setHash(b, 222n);
    p.setHash(c, 333n);
    expect([p.cached(111n), p.cached(222n), p.cached(333n), p.cached(444n)]).toEqual([0, 1, 2, -1]);
    // A sequence frees its blocks last-first, so its tail is evicted first.
    p.decref(c);
    p.decref(b);
    p.decref(a);
    expect(p.freeOrder()).toEqual([3, 2, 1, 0]);
    // A hit on a free cached block takes it out of the queue.
    p.acquire(p.cached(222n));
    expect(p.refCount(1)).toBe(1);
    expect(p.freeOrder()).toEqual([3, 2, 0]);
    // Allocation takes 3 (uncached), then evicts 2 (least recently freed cached block).
    expect(p.allocate()).toBe(3);
    expect(p.allocate()).toBe(2);
    expect(p.cached(333n)).toBe(-1);
    expect(p.cached(111n)).toBe(0);
    // A hit on a block in use just adds a reference.
    p.acquire(1);
    expect(p.refCount(1)).toBe(2);
  });

  it('reuses a freed empty block before it evicts any cached one', () => {
    const p = pool(3);
    const [a, b] = [p.allocate(), p.allocate(), p.allocate()];
    p.setHash(a, 5n);
    p.decref(a); // cached: the tail
    p.decref(b); // nothing cached: the head
    expect(p.freeOrder()).toEqual([b, a]);
    expect(p.allocate()).toBe(b);
    expect(p.cached(5n)).toBe(a);
    expect(p.allocate()).toBe(a); // only now is the cached prefix evicted
    expect(p.cached(5n)).toBe(-1);
  });

  it('keeps the first block registered under a hash', () => {
    const p = pool(4);
    const a = p.allocate(), b = p.allocate();
    p.setHash(a, 7n);
    p.setHash(b, 7n);
    expect(p.cached(7n)).toBe(a);
  });

  it('rejects bad block ids with an error instead of crashing', () => {
    expect(() => pool().refCount(10)).toThrow(/out of range/);
  });
});
