// Writes README.md's configuration table from the flag table (src/cli/flags.ts), and bench/README.md's
// `bench serve` table from src/cli/bench-serve/args.ts: the sources --help prints, so they never
// disagree. Only the lines between the marker comments are replaced. Run `npm run docs` after editing
// a flag; test/cli/readme-flags.test.ts fails while either file is stale.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BENCH_SERVE_FLAGS } from '../src/cli/bench-serve/args.js';
import { FLAGS, flagHelp, flagUsage, type FlagSpec } from '../src/cli/flags.js';

export const README_FILE = fileURLToPath(new URL('../README.md', import.meta.url));
export const BENCH_README_FILE = fileURLToPath(new URL('../bench/README.md', import.meta.url));
export const START_MARKER = '<!-- flags:start: generated from src/cli/flags.ts by `npm run docs`; edit there -->';
export const END_MARKER = '<!-- flags:end -->';
/** `bench serve`'s table (src/cli/bench-serve/args.ts), in bench/README.md. */
export const BENCH_START_MARKER = '<!-- bench-serve-flags:start: generated from src/cli/bench-serve/args.ts by `npm run docs`; edit there -->';
export const BENCH_END_MARKER = '<!-- bench-serve-flags:end -->';

/** Markdown for one table cell: `|` escaped everywhere (GFM's table rule, code spans included),
 * `*`, `_` and `<` escaped outside code spans so help text stays literal. */
function cell(text: string): string {
  return text
    .split('`')
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/[*_<]/g, '\\$&')))
    .join('`')
    .replaceAll('|', '\\|');
}

function renderTable(flags: readonly Pick<FlagSpec, 'name' | 'arg' | 'negatable' | 'help' | 'compat'>[]): string {
  const rows = flags.map((f) => `| ${cell(`\`${flagUsage(f as FlagSpec)}\``)} | ${cell(flagHelp(f as FlagSpec))} |`);
  return ['| flag | meaning |', '| --- | --- |', ...rows].join('\n');
}

export const renderFlagTable = (): string => renderTable(FLAGS);
export const renderBenchServeFlagTable = (): string => renderTable(BENCH_SERVE_FLAGS);

function between(readme: string, startMarker: string, endMarker: string, table: string): string {
  const start = readme.indexOf(startMarker);
  const end = readme.indexOf(endMarker);
  return `${readme.slice(0, start + startMarker.length)}\n${table}\n${readme.slice(end)}`;
}

function replaceBetween(doc: string, file: string, startMarker: string, endMarker: string, table: string): string {
  const start = doc.indexOf(startMarker);
  const end = doc.indexOf(endMarker);
  if (start < 0 || end < start) throw new Error(`${file} lacks the markers ${startMarker} … ${endMarker}`);
  return between(doc, startMarker, endMarker, table);
}

/** `readme` with the text between the markers replaced by the generated configuration table. */
export const withFlagTable = (readme: string): string => replaceBetween(readme, 'README.md', START_MARKER, END_MARKER, renderFlagTable());

/** `doc` (bench/README.md) with the text between the bench serve markers replaced by its generated table. */
export const withBenchServeFlagTable = (doc: string): string =>
  replaceBetween(doc, 'bench/README.md', BENCH_START_MARKER, BENCH_END_MARKER, renderBenchServeFlagTable());

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [file, render] of [[README_FILE, withFlagTable], [BENCH_README_FILE, withBenchServeFlagTable]] as const) {
    const before = readFileSync(file, 'utf8');
    const after = render(before);
    if (after !== before) writeFileSync(file, after);
    console.log(after === before ? `${file}: flag table already up to date` : `wrote the flag table into ${file}`);
  }
}
