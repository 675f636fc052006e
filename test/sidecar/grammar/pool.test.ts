// The grammar pool's placement and step counters, on real workers (xgrammar) with the test tokenizer:
//  - requests sharing one schema are spread over the workers by constrained rows (a cached worker wins
//    only a tie), so a batch of identical requests does not compute all its masks on one worker;
//  - tokens posted into a request's buffer as the engine posts them (then the grammar bell rung) are
//    accepted and the next masks published without a message; each step's batch is counted (rows,
//    batches, busy time, the hop from the ring), read from shared memory;
//  - in a model vocabulary wider than the tokenizer, the padding ids are never allowed (xgrammar is
//    given the tokenizer's ids only; the row's words past them stay zero).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Constraint } from '../../../src/protocol/engine-client.js';
import { MASK_FAILED, maskRowStart, postToken } from '../../../src/sidecar/grammar/mask-layout.js';
import { GrammarPool, type GrammarSession } from '../../../src/sidecar/grammar/pool.js';
import { grammarVocab } from '../../../src/sidecar/grammar/vocab.js';
import { native } from '../../../src/sidecar/native.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { TOKENIZER_DIR } from '../server/helpers.js';

let pool: GrammarPool;
let bundle: TokenizerBundle;
const VOCAB = 3072;

beforeAll(async () => {
  bundle = await loadTokenizerBundle(TOKENIZER_DIR, { maxModelLen: 1024 });
  pool = await GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, VOCAB, bundle.eosIds), workers: 2, cacheSize: 16 });
});
afterAll(async () => {
  await pool?.stop();
});

const schema = (tag: string): Constraint => ({
  kind: 'json_schema',
  schema: JSON.stringify({ type: 'object', properties: { [tag]: { type: 'string' } }, required: [tag] }),
  param: 'schema',
});

/** The first token choice `index`'s published mask allows. */
function allowed(s: GrammarSession, n: number, index: number): number {
  for (let w = 0; w < s.maskWords; w++) {
    const x = s.buf[maskRowStart(n, s.maskWords, index) + w]!;
    if (x !== 0) return w * 32 + (31 - Math.clz32(x & -x));
  }
  throw new Error('no token allowed');
}

describe('GrammarPool', () => {
  it('spreads requests sharing a schema over the workers; a cached worker wins only a tie', async () => {
    const c = schema('spread');
    const a = await pool.open(c, 1, bundle.eosIds);
    const b = await pool.open(c, 1, bundle.eosIds); // the other worker: it compiles the schema too
    const third = await pool.open(c, 1, bundle.eosIds); // a tie of one row each: both have it cached
    expect([a.cached, b.cached, third.cached]).toEqual([false, false, true]);
    const wide = await pool.open(schema('wide'), 3, bundle.eosIds); // the worker with one row takes 3 more
    const next = await pool.open(c, 1, bundle.eosIds); // 2 rows against 4: the first worker, cached
    expect(next.cached).toBe(true);
    for (const s of [a, b, third, wide, next]) pool.close(s.key);
  });

  it('serves tokens posted into the buffer and the bell rung (the engine hand-off); counts the batch', async () => {
    // One worker: its messages are handled in order, so a later open() returning means the batch is done.
    const one = await GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, VOCAB, bundle.eosIds), workers: 1, cacheSize: 4 });
    const before = one.maskStats();
    expect(before).toEqual({ workers: 1, batches: 0, rows: 0, busyMs: 0, busyMsByWorker: [0], hopMs: 0 });
    const s = await one.open(schema('count'), 2, bundle.eosIds);
    const row0 = s.buf.slice(maskRowStart(2, s.maskWords, 0), maskRowStart(2, s.maskWords, 1));
    const tokens = [allowed(s, 2, 0), allowed(s, 2, 1)];
    postToken(s.buf, 2, 0, tokens[0]!, 1);
    postToken(s.buf, 2, 1, tokens[1]!, 1);
    native().grammarRing();
    for (const i of [0, 1]) {
      // ready[i] moves from 0 (the first mask) to 1: the engine's own wait, here on the test's thread.
      while (Atomics.load(s.buf, i) === 0) Atomics.wait(s.buf, i, 0, 1000);
      expect(Atomics.load(s.buf, i)).toBe(1);
    }
    // '{' taken: the next mask is another one (a key's opening quote, whitespace).
    expect(s.buf.slice(maskRowStart(2, s.maskWords, 0), maskRowStart(2, s.maskWords, 1))).not.toEqual(row0);
    one.close((await one.open(schema('count'), 1, bundle.eosIds)).key);
    const after = one.maskStats();
    expect(after.rows).toBe(2);
    expect(after.batches).toBe(1);
    expect(after.busyMs).toBeGreaterThan(0);
    expect(after.busyMsByWorker).toEqual([after.busyMs]);
    expect(after.hopMs).toBeGreaterThanOrEqual(0);
    one.close(s.key);
    await one.stop();
  });

  it('a token posted out of turn fails its choice alone', async () => {
    const one = await GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, VOCAB, bundle.eosIds), workers: 1, cacheSize: 4 });
    const failed: [number, number][] = [];
    one.onFailed = (key, index) => failed.push([key, index]);
    const s = await one.open(schema('turn'), 2, bundle.eosIds);
    postToken(s.buf, 2, 1, allowed(s, 2, 1), 2); // choice 1's second token before its first
    native().grammarRing();
    while (Atomics.load(s.buf, 1) === 0) Atomics.wait(s.buf, 1, 0, 1000);
    expect(Atomics.load(s.buf, 1)).toBe(MASK_FAILED);
    expect(Atomics.load(s.buf, 0)).toBe(0);
    one.close((await one.open(schema('turn'), 1, bundle.eosIds)).key); // its 'failed' message came first
    expect(failed).toEqual([[s.key, 1]]);
    one.close(s.key);
    await one.stop();
  });

  it('never allows a padding id of a model vocabulary wider than the tokenizer', async () => {
    const wide = await GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, 103_424, bundle.eosIds), workers: 1, cacheSize: 4 });
    const pieces = bundle.tokenizer.size;
    expect(pieces % 32).not.toBe(0); // the last word xgrammar knows is partial: its padding bits are checked too
    // Any text: every piece but the specials is allowed, so a padding bit set would show.
    const s = await wide.open({ kind: 'grammar', ebnf: 'root ::= [^\\x00]*', param: 'grammar' }, 1, bundle.eosIds);
    expect(s.maskWords).toBe(Math.ceil(103_424 / 32));
    const ids: number[] = [];
    const row = maskRowStart(1, s.maskWords, 0);
    for (let t = 0; t < 103_424; t++) if ((s.buf[row + (t >> 5)]! >>> (t & 31)) & 1) ids.push(t);
    expect(ids.length).toBeGreaterThan(pieces / 2);
    expect(Math.max(...ids)).toBeLessThan(pieces);
    wide.close(s.key);
    await wide.stop();
  });
});
