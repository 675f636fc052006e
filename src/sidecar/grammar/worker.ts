// A grammar worker thread (./pool.ts): one xgrammar instance with the model's TokenizerInfo, its cache
// of compiled grammars and the matchers of the requests pinned to it. xgrammar's CompiledGrammar cannot
// be serialized, so the instance that compiles a grammar is the one that runs its matchers.
// Messages are handled in order, one at a time (a compile holds this worker, not the others).
// Between messages the worker serves its requests' tokens: the engine's step thread writes each
// constrained choice's new token into the request's buffer and rings the grammar bell
// (./mask-layout.ts, native/src/engine/grammar_bell.h); the worker, blocked on the bell while it has
// nothing to do, wakes, accepts every posted token of its sessions and publishes the next masks. It
// turns to its event loop (messages, xgrammar's own promises) before each block, and the pool rings
// after each message it posts.
// A second, throwaway instance parses each new source first: xgrammar reports a bad grammar by aborting
// inside WebAssembly, which leaks that instance's memory (enough aborts corrupt it); the checker is
// replaced after an abort, the serving instance only ever sees sources that parsed.
import { parentPort, workerData } from 'node:worker_threads';
import type { CompiledGrammar as Compiled, GrammarMatcher as Matcher } from '@mlc-ai/web-xgrammar';
import { Lru } from './lru.js';
import { native } from '../native.js';
import { MASK_FAILED, MaskCounter, maskRowStart, postedToken } from './mask-layout.js';
import type { WorkerData, WorkerReply, WorkerRequest } from './pool.js';
import { lowerSource } from './compile-lowering.js';
import { compileSource, parseSource, sourceKey, type GrammarSource } from './source.js';
import { Utf8Guard, type Utf8State } from './utf8-guard.js';
import { FatalMessages, loadXgrammar, type XgrammarModule } from './xgrammar.js';
import { MaskWriter } from './mask-writer.js';


interface Session {
  buf: Int32Array;
  n: number;
  matchers: Matcher[];
  counts: number[]; // tokens accepted per choice
  utf8: Utf8State[]; // per choice: byte pieces keep to well-formed UTF-8 (./utf8-guard.ts)
  stopIds: number[];
}

const data = workerData as WorkerData;
const port = parentPort!;
const fatal = new FatalMessages();
fatal.install();

const xg = loadXgrammar();
// xgrammar knows the tokenizer's ids only (vocab.ts says why); a row's words past its mask stay zero.
const known = data.vocab.pieces.length;
const info = await xg.TokenizerInfo.createTokenizerInfo(data.vocab.pieces, data.vocab.vocabType, false, known, data.vocab.stopIds);
const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
const words = Math.ceil(data.vocab.vocabSize / 32);
const utf8 = new Utf8Guard(data.vocab);
const knownWords = Math.ceil(known / 32);
const lastWordBits = known % 32 === 0 ? -1 : (1 << known % 32) - 1; // ids of the last word xgrammar knows
const cache = new Lru<string, Compiled>(data.cacheSize, (g) => g.dispose());
let checker: XgrammarModule | null = loadXgrammar();
const sessions = new Map<number, Session>();
const addon = native();
// The per-row calls (accept, isTerminated, the mask) without embind's JS wrappers (./mask-writer.ts).
const calls = new MaskWriter(xg);
/** A block on the bell ends after this long (ms) so that terminate() and a missed message are noticed. */
const IDLE_WAIT_MS = 20;

/** Compiles (or finds) a source; a bad one throws with xgrammar's message. */
async function compiled(source: GrammarSource): Promise<{ grammar: Compiled; cached: boolean }> {
  const key = sourceKey(source);
  const hit = cache.get(key);
  if (hit) return { grammar: hit, cached: true };
  checker ??= loadXgrammar();
  try {
    source = await lowerSource(checker, source);
    await parseSource(checker, source);
  } catch (e) {
    checker = null; // aborted inside: start a fresh one next time
    throw new Error(fatal.take((e as Error).message));
  }
  let grammar: Compiled;
  try {
    grammar = await compileSource(compiler, source);
  } catch (e) {
    throw new Error(fatal.take((e as Error).message));
  }
  cache.set(key, grammar);
  return { grammar, cached: false };
}

/** Writes choice i's mask for its next token and publishes it (ready = tokens accepted so far). */
function publish(s: Session, i: number): void {
  const m = s.matchers[i]!;
  const row = maskRowStart(s.n, words, i);
  if (calls.isTerminated(m)) {
    // A stop id was accepted but the choice goes on (min_tokens): nothing but stop ids, as before it.
    s.buf.fill(0, row, row + words);
    for (const t of s.stopIds) s.buf[row + (t >> 5)]! |= 1 << (t & 31);
  } else {
    calls.write(m, s.buf, row, knownWords);
    s.buf[row + knownWords - 1]! &= lastWordBits;
    utf8.narrow(s.utf8[i]!, s.buf, row);
  }
  Atomics.store(s.buf, i, s.counts[i]!);
}

function fail(key: number, s: Session, index: number, message: string): void {
  Atomics.store(s.buf, index, MASK_FAILED);
  post({ op: 'failed', key, index, message });
}

function post(r: WorkerReply): void {
  port.postMessage(r);
}

async function handle(msg: WorkerRequest): Promise<void> {
  switch (msg.op) {
    case 'open': {
      const t0 = performance.now();
      let got: { grammar: Compiled; cached: boolean };
      try {
        got = await compiled(msg.source);
      } catch (e) {
        post({ op: 'opened', key: msg.key, error: (e as Error).message });
        return;
      }
      // A request's stop id past xgrammar's ids is a padding id: never allowed under a grammar.
      const stops = msg.stopIds.length > 0 ? msg.stopIds.filter((t) => t < known) : data.vocab.stopIds;
      const s: Session = { buf: msg.buf, n: msg.n, matchers: [], counts: [], utf8: [], stopIds: stops };
      for (let i = 0; i < msg.n; i++) {
        s.matchers.push(await xg.GrammarMatcher.createGrammarMatcher(got.grammar, stops));
        s.counts.push(0);
        s.utf8.push(Utf8Guard.start());
      }
      sessions.set(msg.key, s);
      for (let i = 0; i < msg.n; i++) publish(s, i);
      post({ op: 'opened', key: msg.key, compileMs: performance.now() - t0, cached: got.cached });
      return;
    }
    case 'close': {
      const s = sessions.get(msg.key);
      if (!s) return;
      sessions.delete(msg.key);
      for (const m of s.matchers) m.dispose();
      return;
    }
  }
}

/**
 * Accepts every token the engine posted to this worker's sessions since the last call and publishes
 * the next masks; whether there were any. A choice's tokens come one at a time: the engine samples the
 * next only from the mask published for this one.
 */
function serveTokens(): boolean {
  const c = data.counters;
  let rows = 0;
  let t0 = 0;
  for (const [key, s] of sessions) {
    for (let i = 0; i < s.n; i++) {
      const { posted, token } = postedToken(s.buf, s.n, i);
      if (posted <= s.counts[i]!) continue;
      if (rows++ === 0) {
        t0 = performance.now();
        const age = addon.grammarRingAge();
        if (age >= 0) c[MaskCounter.HopMs]! += age;
      }
      const m = s.matchers[i]!;
      if (posted !== s.counts[i]! + 1) {
        fail(key, s, i, `structured output: token ${posted} of this choice arrived after ${s.counts[i]}`);
        s.counts[i] = posted;
        continue;
      }
      if (!calls.isTerminated(m) && !calls.accept(m, token)) {
        s.counts[i] = posted; // failed: nothing more is read for it
        fail(key, s, i, `structured output: the grammar rejected token ${token}`);
        continue;
      }
      s.counts[i] = posted;
      utf8.accept(s.utf8[i]!, token);
      publish(s, i);
      c[MaskCounter.Rows]!++;
    }
  }
  if (rows > 0) {
    c[MaskCounter.Batches]!++;
    c[MaskCounter.BusyMs]! += performance.now() - t0;
  }
  return rows > 0;
}

// The loop: messages first (in arrival order, one at a time), then posted tokens; with neither, a turn
// of the event loop (a message posted meanwhile arrives there), then a block on the bell. The bell's
// count is read before looking, so a ring after the look ends the block at once.
const inbox: WorkerRequest[] = [];
port.on('message', (msg: WorkerRequest) => inbox.push(msg));
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
async function serve(): Promise<void> {
  for (;;) {
    const seen = addon.grammarBell();
    while (inbox.length > 0) await handle(inbox.shift()!);
    if (serveTokens()) continue;
    await turn();
    if (inbox.length === 0) addon.grammarWait(seen, IDLE_WAIT_MS);
  }
}
post({ op: 'ready' });
serve().catch((e: unknown) => post({ op: 'crashed', message: String((e as Error)?.stack ?? e) }));
