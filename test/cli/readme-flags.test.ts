// README.md's configuration table is generated from the flag table (scripts/gen-readme-flags.ts), and
// help texts state meaning, default and reason, never measured figures (those live in bench/results/).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FLAGS, flagHelp, flagUsage, helpText } from '../../src/cli/flags.js';
import { BENCH_END_MARKER, BENCH_START_MARKER, END_MARKER, README_FILE, renderBenchServeFlagTable, renderFlagTable, START_MARKER, withBenchServeFlagTable, withFlagTable } from '../../scripts/gen-readme-flags.js';

describe('README flag table', () => {
  it('matches src/cli/flags.ts', () => {
    const readme = readFileSync(README_FILE, 'utf8');
    const start = readme.indexOf(START_MARKER);
    const end = readme.indexOf(END_MARKER);
    expect(start >= 0 && end > start, 'README.md lost its flag table markers').toBe(true);
    // Compared section to section, so a failure's diff shows the rows that differ.
    const table = readme.slice(start + START_MARKER.length, end).trim();
    expect(table, 'README.md and src/cli/flags.ts disagree: run `npm run docs`').toBe(renderFlagTable());
    expect(withFlagTable(readme)).toBe(readme);
  });

  it('has one row per flag, as --help lists them, with table pipes escaped', () => {
    const rows = renderFlagTable().split('\n').slice(2);
    expect(rows).toHaveLength(FLAGS.length);
    expect(rows[0]).toBe(`| \`--role serve\\|sidecar\\|gateway\` | ${flagHelp(FLAGS[0]!)} |`);
    const help = helpText('0.0.0');
    for (const f of FLAGS) expect(help).toContain(`${flagUsage(f).padEnd(38)} ${flagHelp(f)}`);
  });

  it('replaces only what lies between the markers', () => {
    const doc = `# t\n\nbefore\n${START_MARKER}\nstale\n${END_MARKER}\nafter\n`;
    expect(withFlagTable(doc)).toBe(`# t\n\nbefore\n${START_MARKER}\n${renderFlagTable()}\n${END_MARKER}\nafter\n`);
    expect(() => withFlagTable('# no markers\n')).toThrow(/README.md lacks the markers/);
    // bench/README.md's bench serve table the same way, and only that one.
    const bench = `# b\n${START_MARKER}\nkept\n${END_MARKER}\n${BENCH_START_MARKER}\nstale\n${BENCH_END_MARKER}\nafter\n`;
    expect(withBenchServeFlagTable(bench)).toBe(`# b\n${START_MARKER}\nkept\n${END_MARKER}\n${BENCH_START_MARKER}\n${renderBenchServeFlagTable()}\n${BENCH_END_MARKER}\nafter\n`);
    expect(() => withBenchServeFlagTable('# no markers\n')).toThrow(/bench\/README.md lacks the markers/);
  });

  it('help texts quote no measured figures', () => {
    const figure = /tok\/s|\d\s*(ms|µs|us)\b|TTFT p\d+|\d+(\.\d+)?k\b|\d+(\.\d+)?x\b|GB\/s|GFLOP/;
    for (const f of FLAGS) expect(flagHelp(f), `--${f.name}`).not.toMatch(figure);
  });
});
