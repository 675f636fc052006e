// `node --import tsx bench/grammar-mask.ts [--vocab full|test] [--steps N]`: one xgrammar instance's
// mask cost per row (getNextTokenBitmask) by schema shape, as the grammar workers compile them
// (source.ts + compile-lowering.ts), over the model's vocabulary. Each row walks a matcher with a
// uniformly random allowed token per step (what random logits do), restarting when it completes.
// Single thread: the cost a worker pays per constrained row. A schema whose lowering reshapes string
// tails (src/sidecar/grammar/string-tail-lookahead.ts) is also run without that step, same walk, for
// its effect. Results: bench/results/grammar-mask-<vocab>.json. bench/grammar-rows.ts measures a
// worker's whole row (accept + mask) in CPU time over 201 schemas' streams, against main's path.
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lowerSource } from '../src/sidecar/grammar/compile-lowering.js';
import { compileSource, grammarSource, SEPARATORS, strict, type GrammarSource } from '../src/sidecar/grammar/source.js';
import { literalTries } from '../src/sidecar/grammar/literal-tries.js';
import { rng } from '../src/cli/bench-serve/rng.js';
import { grammarBenchSetup } from './structured-vocab.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : d;
};
const vocabKind = arg('vocab', 'full');
const STEPS = Number(arg('steps', '300'));

const str = (extra: object = {}) => ({ type: 'string', ...extra });
const SCHEMAS: Record<string, object> = {
  'bounded strings x200 (bench LONG_SCHEMA)': { type: 'object', properties: { items: { type: 'array', items: str({ minLength: 2, maxLength: 12 }), minItems: 200, maxItems: 200 } }, required: ['items'], additionalProperties: false },
  'unbounded strings x200': { type: 'object', properties: { items: { type: 'array', items: str(), minItems: 200, maxItems: 200 } }, required: ['items'], additionalProperties: false },
  'integers x200': { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' }, minItems: 200, maxItems: 200 } }, required: ['items'], additionalProperties: false },
  'person records x50': {
    type: 'object',
    properties: {
      people: {
        type: 'array',
        minItems: 50,
        maxItems: 50,
        items: {
          type: 'object',
          properties: { name: str(), age: { type: 'integer', minimum: 0, maximum: 150 }, email: str(), role: { enum: ['admin', 'user', 'guest'] }, tags: { type: 'array', items: str(), maxItems: 4 } },
          required: ['name', 'age', 'email', 'role', 'tags'],
          additionalProperties: false,
        },
      },
    },
    required: ['people'],
    additionalProperties: false,
  },
};

const { vocab, xg, compiler } = await grammarBenchSetup(vocabKind);
console.log(`[grammar-mask] ${vocab.pieces.length} pieces (${vocabKind}), ${STEPS} steps per schema`);

const variants: [string, GrammarSource][] = [];
for (const [name, schema] of Object.entries(SCHEMAS)) {
  const raw = grammarSource({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'schema' });
  const source = await lowerSource(xg, raw);
  variants.push([name, source]);
  const printed = await xg.Grammar.fromJSONSchema(raw.text, false, -1, SEPARATORS, strict(raw));
  const without: GrammarSource = { kind: 'ebnf', text: literalTries(printed.toString()) };
  printed.dispose();
  if (without.text !== source.text) variants.push([`${name}, without the string-tail step`, without]);
}
const rows: Record<string, unknown>[] = [];
for (const [name, source] of variants) {
  const t0 = performance.now();
  const grammar = await compileSource(compiler, source);
  const compileMs = performance.now() - t0;
  const next = rng(7);
  let m = await xg.GrammarMatcher.createGrammarMatcher(grammar, vocab.stopIds);
  const us: number[] = [];
  const allowedCounts: number[] = [];
  for (let step = 0; step < STEPS; step++) {
    const t = performance.now();
    const mask = await m.getNextTokenBitmask();
    us.push(1000 * (performance.now() - t));
    const allowed: number[] = [];
    for (let id = 0; id < vocab.pieces.length; id++) if ((mask[id >> 5]! >>> (id & 31)) & 1) allowed.push(id);
    allowedCounts.push(allowed.length);
    const nonStop = allowed.filter((id) => !vocab.stopIds.includes(id));
    if (nonStop.length === 0 || m.isTerminated()) {
      m.dispose();
      m = await xg.GrammarMatcher.createGrammarMatcher(grammar, vocab.stopIds);
      continue;
    }
    if (!m.acceptToken(nonStop[Math.floor(next() * nonStop.length)]!)) throw new Error(`${name}: an allowed token was rejected`);
  }
  m.dispose();
  grammar.dispose();
  const s = [...us].sort((a, b) => a - b);
  const row = { schema: name, loadAvg: Number(os.loadavg()[0]!.toFixed(2)), compileMs: Math.round(compileMs), usPerRow: { p50: Math.round(s[s.length >> 1]!), p90: Math.round(s[Math.floor(s.length * 0.9)]!), mean: Math.round(us.reduce((a, b) => a + b, 0) / us.length) }, allowedP50: [...allowedCounts].sort((a, b) => a - b)[allowedCounts.length >> 1] };
  rows.push(row);
  console.log(JSON.stringify(row));
}
await writeFile(path.join(here, 'results', `grammar-mask-${vocabKind}.json`), JSON.stringify({ date: new Date().toISOString(), command: `node --import tsx bench/grammar-mask.ts --vocab ${vocabKind} --steps ${STEPS}`, host: `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores`, pieces: vocab.pieces.length, rows }, null, 2) + '\n');
