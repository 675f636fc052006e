// The V8 pool size of the serving processes (src/cli/v8-pool.ts): one thread per 4 available cores,
// 1 to Node's 4, and a size the user chose (node flag or NODE_OPTIONS) is kept.
import { describe, expect, it } from 'vitest';
import { NODE_DEFAULT_POOL, servingExecArgv, servingPoolFlags, servingPoolSize } from '../../src/cli/v8-pool.js';

describe('V8 pool of the serving processes', () => {
  it('gives one pool thread per 4 available cores, at least 1 and at most Node default', () => {
    expect([1, 2, 3, 4, 7, 8, 12, 15, 16, 64].map(servingPoolSize)).toEqual([1, 1, 1, 1, 1, 2, 3, 3, NODE_DEFAULT_POOL, NODE_DEFAULT_POOL]);
  });

  it('adds the flag only where the size differs from Node default', () => {
    expect(servingPoolFlags([], undefined, 2)).toEqual(['--v8-pool-size=1']);
    expect(servingPoolFlags([], undefined, 8)).toEqual(['--v8-pool-size=2']);
    expect(servingPoolFlags([], undefined, 16)).toEqual([]);
    expect(servingPoolFlags(['--enable-source-maps'], '--max-old-space-size=512', 2)).toEqual(['--v8-pool-size=1']);
  });

  it('keeps a size the user chose, in either spelling, and NODE_OPTIONS reaches children by itself', () => {
    expect(servingPoolFlags(['--v8-pool-size=3'], undefined, 2)).toEqual(['--v8-pool-size=3']);
    expect(servingPoolFlags(['--enable-source-maps', '--v8-pool-size', '2', '--x'], undefined, 2)).toEqual(['--v8-pool-size', '2']);
    expect(servingPoolFlags([], '--v8-pool-size=3', 2)).toEqual([]);
    expect(servingPoolFlags([], '--trace-gc --v8-pool-size 3', 2)).toEqual([]);
    expect(servingPoolFlags([], '--v8-pool-sizes=3', 2)).toEqual(['--v8-pool-size=1']); // not the flag
  });

  it('a forked gateway gets the parent execArgv plus the flag, once', () => {
    expect(servingExecArgv(['--enable-source-maps'], undefined, 2)).toEqual(['--enable-source-maps', '--v8-pool-size=1']);
    expect(servingExecArgv(['--v8-pool-size=1'], undefined, 2)).toEqual(['--v8-pool-size=1']);
    expect(servingExecArgv([], '--v8-pool-size=2', 2)).toEqual([]);
    expect(servingExecArgv([], undefined, 32)).toEqual([]);
  });
});
