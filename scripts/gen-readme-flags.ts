// Writes README.md's configuration table from the flag table (src/cli/flags.ts), the source --help
// prints, so the two never disagree. Only the lines between the marker comments are replaced. Run
// `npm run docs` after editing a flag; test/cli/readme-flags.test.ts fails while README.md is stale.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FLAGS, flagHelp, flagUsage } from '../src/cli/flags.js';

export const README_FILE = fileURLToPath(new URL('../README.md', import.meta.url));
export const START_MARKER = '<!-- flags:start: generated from src/cli/flags.ts by `npm run docs`; edit there -->';
export const END_MARKER = '<!-- flags:end -->';

/** Markdown for one table cell: `|` escaped everywhere (GFM's table rule, code spans included),
 * `*`, `_` and `<` escaped outside code spans so help text stays literal. */
function cell(text: string): string {
  return text
    .split('`')
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/[*_<]/g, '\\$&')))
    .join('`')
    .replaceAll('|', '\\|');
}

export function renderFlagTable(): string {
  const rows = FLAGS.map((f) => `| ${cell(`\`${flagUsage(f)}\``)} | ${cell(flagHelp(f))} |`);
  return ['| flag | meaning |', '| --- | --- |', ...rows].join('\n');
}

/** `readme` with the text between the markers replaced by the generated table. */
export function withFlagTable(readme: string): string {
  const start = readme.indexOf(START_MARKER);
  const end = readme.indexOf(END_MARKER);
  if (start < 0 || end < start) throw new Error(`README.md lacks the markers ${START_MARKER} … ${END_MARKER}`);
  return `${readme.slice(0, start + START_MARKER.length)}\n${renderFlagTable()}\n${readme.slice(end)}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const before = readFileSync(README_FILE, 'utf8');
  const after = withFlagTable(before);
  if (after !== before) writeFileSync(README_FILE, after);
  console.log(after === before ? `${README_FILE}: flag table already up to date` : `wrote the flag table into ${README_FILE}`);
}
