// The grammar worker's part in engine tests: a request's mask buffer (src/sidecar/grammar/mask-layout.ts)
// whose rows the test writes and publishes as each choice's previous token arrives.
import { Finish, type StepOutput } from '../../src/sidecar/engine/native-engine.js';
import { allocateMasks, maskRow, maskWords } from '../../src/sidecar/grammar/mask-layout.js';

const V = 2048; // the tiny checkpoint's vocabulary
const W = maskWords(V);

/** A request's masks: `allowedAt(choice, step)` is the set its step-th token must come from. */
export class Masks {
  readonly buf: Int32Array;
  private readonly counts: number[];
  hold = false; // while set, the next rows are not published (the engine must wait)
  constructor(
    readonly n: number,
    readonly allowedAt: (choice: number, step: number) => number[],
  ) {
    this.buf = allocateMasks(n, W);
    this.counts = Array.from({ length: n }, () => 0);
    for (let i = 0; i < n; i++) this.publish(i);
  }
  publish(i: number): void {
    const row = maskRow(this.buf, this.n, W, i);
    row.fill(0);
    for (const t of this.allowedAt(i, this.counts[i]!)) row[t >> 5]! |= 1 << (t & 31);
    Atomics.store(this.buf, i, this.counts[i]!);
  }
  /** The worker's part for one output: accept the token, publish the next row. */
  onOutput(o: StepOutput): void {
    if (o.tokens.length === 0 || o.finish !== Finish.None) return;
    for (let k = 0; k < o.tokens.length; k++) this.advance(o.index);
  }
  /** Choice i's next token arrived: publish the row for the one after it (unless held). */
  advance(i: number): void {
    this.counts[i]!++;
    if (!this.hold) this.publish(i);
  }
}

export function pseudoSet(seed: number, size: number, lo = 3): number[] {
  const out = new Set<number>();
  let s = seed >>> 0;
  while (out.size < size) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out.add(lo + (s % (V - lo)));
  }
  return [...out].sort((a, b) => a - b);
}

