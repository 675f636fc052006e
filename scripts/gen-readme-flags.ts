// Writes README.md's configuration table from the flag table (src/cli/flags.ts), the source --help
// prints, so the two never disagree. Only the lines between the marker comments are replaced. Run
// `npm run docs` after editing a flag; test/cli/readme-flags.test.ts fails while README.md is stale.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BENCH_SERVE_FLAGS } from '../src/cli/bench-serve/args.js';
import { FLAGS, flagHelp, flagUsage, type FlagSpec } from '../src/cli/flags.js';

export const README_FILE = fileURLToPath(new URL('../README.md', import.meta.url));
export const START_MARKER = '<!-- flags:start: generated from src/cli/flags.ts by `npm run docs`; edit there -->';
export const END_MARKER = '<!-- flags:end -->';
/** `bench serve`'s table (src/cli/bench-serve/args.ts), replaced when README.md has these markers. */
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

/** `readme` with the text between the markers replaced by the generated tables (bench serve's where it has its markers). */
export function withFlagTable(readme: string): string {
  const start = readme.indexOf(START_MARKER);
  const end = readme.indexOf(END_MARKER);
  if (start < 0 || end < start) throw new Error(`README.md lacks the markers ${START_MARKER} … ${END_MARKER}`);
  const out = between(readme, START_MARKER, END_MARKER, renderFlagTable());
  const bs = out.indexOf(BENCH_START_MARKER);
  return bs >= 0 && out.indexOf(BENCH_END_MARKER) > bs ? between(out, BENCH_START_MARKER, BENCH_END_MARKER, renderBenchServeFlagTable()) : out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const before = readFileSync(README_FILE, 'utf8');
  const after = withFlagTable(before);
  if (after !== before) writeFileSync(README_FILE, after);
  console.log(after === before ? `${README_FILE}: flag table already up to date` : `wrote the flag table into ${README_FILE}`);
}
