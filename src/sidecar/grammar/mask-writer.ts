// A grammar worker's per-row calls into xgrammar (./worker.ts): accept a token, ask whether the
// matcher terminated, write the next mask into the request's row. Each goes straight to the WebAssembly
// function behind the embind method (./xgrammar.ts records them as embind registers them): embind's JS
// wrapper around GetNextTokenBitmask checks its arguments, wraps the returned std::vector<int32_t> in a
// class handle, which a second call (vecIntToView) views and a third (delete) frees; here the raw
// invoker returns the vector's address, its words are copied from the heap and its raw destructor
// frees it. Same C++ calls, same bits (bench/grammar-rows.ts compares every row over 201 schemas'
// streams; test/sidecar/grammar/mask-writer.test.ts compares the paths).
// The vector is libc++'s: {begin, end, capacity} pointers at its address; a vector whose length is not
// the matcher's bitmask size (a different build) throws.
import type { GrammarMatcher } from '@mlc-ai/web-xgrammar';
import type { RawMethod, XgrammarModule } from './xgrammar.js';

interface Handle {
  $$: { ptr: number };
}

export class MaskWriter {
  private bound: { mask: RawMethod; accept: RawMethod; terminated: RawMethod; freeVector: (ptr: number) => void; heap32: () => Int32Array } | null = null;

  constructor(private readonly xg: XgrammarModule) {}

  /** Resolves the raw functions once the module is initialised (a matcher exists). */
  private raw() {
    if (this.bound) return this.bound;
    const r = this.xg.rawBindings();
    if (!r) throw new Error('xgrammar is not initialised: no matcher exists yet');
    const method = (name: string) => {
      const m = r.raw.methods.get(`GrammarMatcher.${name}`);
      if (!m) throw new Error(`xgrammar: GrammarMatcher.${name} was not registered`);
      return m;
    };
    const freeVector = r.raw.destructors.get('VectorInt');
    if (!freeVector) throw new Error('xgrammar: VectorInt was not registered');
    this.bound = { mask: method('GetNextTokenBitmask'), accept: method('AcceptToken'), terminated: method('IsTerminated'), freeVector, heap32: r.heap32 };
    return this.bound;
  }

  private static ptr(m: GrammarMatcher): number {
    return ((m as unknown as { handle: Handle }).handle.$$).ptr;
  }

  /** matcher.acceptToken(token) */
  accept(m: GrammarMatcher, token: number): boolean {
    const b = this.raw();
    return b.accept.invoker(b.accept.context, MaskWriter.ptr(m), token, 0) !== 0;
  }

  /** matcher.isTerminated() */
  isTerminated(m: GrammarMatcher): boolean {
    const b = this.raw();
    return b.terminated.invoker(b.terminated.context, MaskWriter.ptr(m)) !== 0;
  }

  /** The matcher's next token bitmask's first `words` words into out at `at` (as xg.writeNextTokenBitmask). */
  write(m: GrammarMatcher, out: Int32Array, at: number, words: number): void {
    const b = this.raw();
    const vocabSize = (m as unknown as { vocab_size: number }).vocab_size;
    const v = b.mask.invoker(b.mask.context, MaskWriter.ptr(m), vocabSize);
    try {
      const heap = b.heap32(); // after the call: a call may grow the memory (a new buffer)
      const begin = heap[v >> 2]! >>> 2;
      const end = heap[(v >> 2) + 1]! >>> 2;
      if (end - begin !== Math.ceil(vocabSize / 32) || words > end - begin) throw new Error(`xgrammar: a bitmask of ${end - begin} words for ${vocabSize} ids (not the build this writer knows)`);
      out.set(heap.subarray(begin, begin + words), at);
    } finally {
      b.freeVector(v);
    }
  }
}
