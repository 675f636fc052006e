// `node --import tsx bench/grammar-rows.ts [--vocab full|test] [--steps N] [--schemas K] [--rounds R] [--only base|fast] [--base-ref REF] [OUT.json]`
// A grammar worker's CPU cost per constrained row (accept the row's token, then write its next mask,
// as ./src/sidecar/grammar/worker.ts does), over real token streams: the bench schema of
// bench/structured.ts (LONG_SCHEMA) and the 200 seeded random schemas of test/doubles/random-schemas.ts,
// each compiled as the workers compile it (lowerSource + compileSource) over the model's vocabulary.
// Two paths: `fast`, the worker's now (this tree's lowering, ./src/sidecar/grammar/mask-writer.ts's raw
// calls, the UTF-8 guard's precomputed clears); `base`, as before: embind's wrappers, and git REF's
// string-tail lowering step and UTF-8 guard (default main: `git show REF:src/sidecar/grammar/…`, the
// modules this bench's branch changed), each schema compiled once per path.
// 1. record: per schema, a seeded walk of up to N steps under the base grammar, each token drawn
//    uniformly from the mask (what random logits do), ending where only stop ids are allowed; the
//    row's mask is kept per step (the reference);
// 2. replay: each path
//    replays every schema's stream R times, the paths interleaved schema by schema (base, fast, fast,
//    base, ...), with this thread's CPU time (process.cpuUsage: user + system, this process runs one
//    thread of work) and wall time around each schema's rows; every mask written on replay is
//    compared, after the timed span, with the recorded one (a mismatch throws: the paths must write
//    the same bits).
// Figures: CPU µs per row by schema class and by the row's allowed-token count (1 = forced), the
// paths' ratio. The host's load shifts wall time; CPU time is what the comparison rests on.
import { execFileSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CompiledGrammar, GrammarMatcher } from '@mlc-ai/web-xgrammar';
import { lowerSource } from '../src/sidecar/grammar/compile-lowering.js';
import { compileSource, grammarSource, SEPARATORS, strict, type GrammarSource } from '../src/sidecar/grammar/source.js';
import { literalTries } from '../src/sidecar/grammar/literal-tries.js';
import { Utf8Guard, type Utf8State } from '../src/sidecar/grammar/utf8-guard.js';
import { MaskWriter } from '../src/sidecar/grammar/mask-writer.js';
import { rng } from '../src/cli/bench-serve/rng.js';
import { randomSchemas } from '../test/doubles/random-schemas.js';
import { grammarBenchSetup } from './structured-vocab.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name: string, d: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : d;
};
const vocabKind = arg('vocab', 'full');
const STEPS = Number(arg('steps', '64'));
const SCHEMAS = Number(arg('schemas', '200'));
const ROUNDS = Number(arg('rounds', '2'));
const only = arg('only', '');
const baseRef = arg('base-ref', 'main');
const out = args.find((a, i) => !a.startsWith('--') && (i === 0 || !args[i - 1]!.startsWith('--'))) ?? path.join(here, 'results', `grammar-rows-${vocabKind}.json`);

const LONG_SCHEMA = {
  type: 'object',
  properties: { items: { type: 'array', items: { type: 'string', minLength: 2, maxLength: 12 }, minItems: 200, maxItems: 200 } },
  required: ['items'],
  additionalProperties: false,
};

const { vocabSize, vocab, xg, compiler } = await grammarBenchSetup(vocabKind);
const known = vocab.pieces.length;
const words = Math.ceil(vocabSize / 32);
const knownWords = Math.ceil(known / 32);
const lastWordBits = known % 32 === 0 ? -1 : (1 << known % 32) - 1;
const utf8 = new Utf8Guard(vocab);
const stopIds = vocab.stopIds;
const writer = new MaskWriter(xg);
// The base lowering: REF's string-tail step (a module without imports), the rest as this tree's.
const baseTailsFile = path.join(await mkdtemp(path.join(os.tmpdir(), 'grammar-rows-')), 'string-tail-lookahead.ts');
await writeFile(baseTailsFile, execFileSync('git', ['show', `${baseRef}:src/sidecar/grammar/string-tail-lookahead.ts`], { cwd: path.join(here, '..') }));
const baseTails = ((await import(baseTailsFile)) as { stringTailLookaheads: (ebnf: string) => string }).stringTailLookaheads;
async function baseLowering(s: GrammarSource): Promise<GrammarSource> {
  const g = await xg.Grammar.fromJSONSchema(s.text, false, -1, SEPARATORS, strict(s));
  try {
    return { kind: 'ebnf', text: baseTails(literalTries(g.toString())) };
  } finally {
    g.dispose();
  }
}
// The base path's UTF-8 guard: REF's (its one import is a type).
const baseGuardFile = path.join(path.dirname(baseTailsFile), 'utf8-guard.ts');
await writeFile(baseGuardFile, execFileSync('git', ['show', `${baseRef}:src/sidecar/grammar/utf8-guard.ts`], { cwd: path.join(here, '..') }));
const baseUtf8 = new ((await import(baseGuardFile)) as { Utf8Guard: typeof Utf8Guard }).Utf8Guard(vocab);

/** A schema's class, by the features that shape its masks. */
function classOf(schema: object): string {
  const t = JSON.stringify(schema);
  if (t.includes('"pattern"')) return 'random: with patterns';
  if (t.includes('"minLength"') || t.includes('"maxLength"')) return 'random: bounded strings';
  if (t.includes('"enum"') || t.includes('"const"') || t.includes('"anyOf"')) return 'random: enums / anyOf';
  return 'random: other';
}
const named: { name: string; cls: string; schema: object }[] = [
  { name: 'bench LONG_SCHEMA', cls: 'bench LONG_SCHEMA (bounded strings x200)', schema: LONG_SCHEMA },
  ...randomSchemas(1, SCHEMAS).map((schema, i) => ({ name: `random #${i}`, cls: classOf(schema), schema })),
];

type Path = 'base' | 'fast';
/** One row as the worker did before (base) or does now (fast): the mask written into buf at row. */
function writeRow(p: Path, m: GrammarMatcher, s: Utf8State, buf: Int32Array, row: number): void {
  if (p === 'base' ? m.isTerminated() : writer.isTerminated(m)) {
    buf.fill(0, row, row + words);
    for (const t of stopIds) buf[row + (t >> 5)]! |= 1 << (t & 31);
    return;
  }
  if (p === 'base') xg.writeNextTokenBitmask(m, buf, row, knownWords);
  else writer.write(m, buf, row, knownWords);
  buf[row + knownWords - 1]! &= lastWordBits;
  (p === 'base' ? baseUtf8 : utf8).narrow(s, buf, row);
}

function same(a: Int32Array, b: Int32Array, at: number): boolean {
  for (let i = 0; i < words; i++) if (a[i] !== b[at + i]) return false;
  return true;
}

interface Stream {
  name: string;
  cls: string;
  grammar: Record<Path, CompiledGrammar>;
  compileMs: Record<Path, number>;
  lowered: boolean; // the two lowerings differ
  tokens: number[];
  masks: Int32Array[]; // masks[k]: the row after tokens[0..k)
  allowed: number[]; // allowed ids per row
}

// 1. record
const streams: Stream[] = [];
const t0 = performance.now();
for (const { name, cls, schema } of named) {
  const raw = grammarSource({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'schema' });
  const sources: Record<Path, GrammarSource> = { base: await baseLowering(raw), fast: await lowerSource(xg, raw) };
  const grammar = {} as Record<Path, CompiledGrammar>;
  const compileMs = {} as Record<Path, number>;
  for (const p of ['base', 'fast'] as Path[]) {
    const c0 = performance.now();
    grammar[p] = await compileSource(compiler, sources[p]);
    compileMs[p] = performance.now() - c0;
  }
  const next = rng(0x5eed ^ streams.length);
  const m = await xg.GrammarMatcher.createGrammarMatcher(grammar.base, stopIds);
  const s = Utf8Guard.start();
  const st: Stream = { name, cls, grammar, compileMs, lowered: sources.base.text !== sources.fast.text, tokens: [], masks: [], allowed: [] };
  const buf = new Int32Array(words);
  for (let step = 0; step <= STEPS; step++) {
    writeRow('base', m, s, buf, 0);
    st.masks.push(buf.slice());
    const ids: number[] = [];
    for (let id = 0; id < known; id++) if ((buf[id >> 5]! >>> (id & 31)) & 1 && !stopIds.includes(id)) ids.push(id);
    st.allowed.push(ids.length);
    if (ids.length === 0 || step === STEPS) break;
    const tok = ids[Math.floor(next() * ids.length)]!;
    if (!m.acceptToken(tok)) throw new Error(`${name}: an allowed token was rejected`);
    utf8.accept(s, tok);
    st.tokens.push(tok);
  }
  m.dispose();
  streams.push(st);
}
const rowsTotal = streams.reduce((a, s) => a + s.tokens.length, 0);
console.log(`[grammar-rows] ${known} pieces (${vocabKind}), ${streams.length} schemas, ${rowsTotal} rows recorded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// 2. replay: a row = accept token k, write mask k+1 (the first mask, written at open, is not a row).
type Acc = { cpuUs: number; wallUs: number; rows: number };
const acc = (): Acc => ({ cpuUs: 0, wallUs: 0, rows: 0 });
const byPath: Record<Path, { all: Acc; cls: Map<string, Acc>; forced: Acc; few: Acc; many: Acc; forcedRows: number }> = {
  base: { all: acc(), cls: new Map(), forced: acc(), few: acc(), many: acc(), forcedRows: 0 },
  fast: { all: acc(), cls: new Map(), forced: acc(), few: acc(), many: acc(), forcedRows: 0 },
};
const scratch = new Int32Array((STEPS + 1) * words); // replay's rows, compared after the timed span
const rowUs = new Float64Array(STEPS + 1);
async function replay(p: Path, st: Stream, count = true): Promise<void> {
  const m = await xg.GrammarMatcher.createGrammarMatcher(st.grammar[p], stopIds);
  const s = Utf8Guard.start();
  writeRow(p, m, s, scratch, 0);
  if (!same(st.masks[0]!, scratch, 0)) throw new Error(`${st.name}: ${p} wrote a different first mask`);
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  for (let k = 0; k < st.tokens.length; k++) {
    const r0 = performance.now();
    const tok = st.tokens[k]!;
    if (p === 'base' ? !m.isTerminated() && !m.acceptToken(tok) : !writer.isTerminated(m) && !writer.accept(m, tok)) throw new Error(`${st.name}: ${p} rejected token ${k}`);
    utf8.accept(s, tok);
    writeRow(p, m, s, scratch, k * words);
    rowUs[k] = 1000 * (performance.now() - r0);
  }
  const c = process.cpuUsage(c0);
  const wallUs = 1000 * (performance.now() - w0);
  m.dispose();
  const n = st.tokens.length;
  for (let k = 0; k < n; k++) if (!same(st.masks[k + 1]!, scratch, k * words)) throw new Error(`${st.name}: ${p} wrote a different mask after token ${k}`);
  if (!count) return;
  const b = byPath[p];
  const add = (a: Acc, cpu: number, wall: number, rows: number) => {
    a.cpuUs += cpu;
    a.wallUs += wall;
    a.rows += rows;
  };
  add(b.all, c.user + c.system, wallUs, n);
  if (!b.cls.has(st.cls)) b.cls.set(st.cls, acc());
  add(b.cls.get(st.cls)!, c.user + c.system, wallUs, n);
  // by the row's allowed count (wall time per row, scaled to the schema's CPU/wall)
  const scale = wallUs > 0 ? (c.user + c.system) / wallUs : 1;
  for (let k = 0; k < n; k++) {
    const a = st.allowed[k + 1]!;
    add(a <= 1 ? b.forced : a <= 100 ? b.few : b.many, rowUs[k]! * scale, rowUs[k]!, 1);
  }
}
const order: Path[][] = only === '' ? [['base', 'fast'], ['fast', 'base']] : [[only as Path]];
// warm-up (JIT tiers, the wasm's heap): one untimed replay of every stream by each path
for (const st of streams) for (const p of order[0]!) await replay(p, st, false);
for (let r = 0; r < ROUNDS; r++)
  for (const [i, st] of streams.entries()) for (const p of order[(i + r) % order.length]!) await replay(p, st);

const perRow = (a: Acc) => ({ rows: a.rows / ROUNDS, cpuUsPerRow: Number((a.cpuUs / Math.max(1, a.rows) ).toFixed(1)), wallUsPerRow: Number((a.wallUs / Math.max(1, a.rows)).toFixed(1)) });
const paths = Object.fromEntries(
  (Object.keys(byPath) as Path[])
    .filter((p) => byPath[p].all.rows > 0)
    .map((p) => {
      const b = byPath[p];
      return [p, { all: perRow(b.all), byClass: Object.fromEntries([...b.cls].sort().map(([k, a]) => [k, perRow(a)])), byAllowed: { 'forced (1 allowed)': perRow(b.forced), '2-100 allowed': perRow(b.few), '>100 allowed': perRow(b.many) } }];
    }),
);
const result = {
  date: new Date().toISOString(),
  command: `node --import tsx bench/grammar-rows.ts --vocab ${vocabKind} --steps ${STEPS} --schemas ${SCHEMAS} --rounds ${ROUNDS}${only ? ` --only ${only}` : ''}`,
  host: `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)}`,
  pieces: known,
  schemas: streams.length,
  rowsPerReplay: rowsTotal,
  masksIdentical: true,
  baseRef: `${baseRef} (${execFileSync('git', ['rev-parse', '--short', baseRef], { cwd: path.join(here, '..') }).toString().trim()})`,
  schemasLoweredDifferently: streams.filter((s) => s.lowered).length,
  compileMsTotal: { base: Math.round(streams.reduce((a, s) => a + s.compileMs.base, 0)), fast: Math.round(streams.reduce((a, s) => a + s.compileMs.fast, 0)) },
  paths,
  ...(paths.base && paths.fast ? { fastOverBaseCpu: Number((paths.fast.all.cpuUsPerRow / paths.base.all.cpuUsPerRow).toFixed(3)) } : {}),
};
console.log(JSON.stringify(result, null, 2));
await writeFile(out, JSON.stringify(result, null, 2) + '\n');
