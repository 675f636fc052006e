// README.md's API support table is generated from the request schemas (scripts/gen-readme-api.ts):
// it must be up to date, list every field each route's schema accepts, and the refused ones.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { END_MARKER, README_FILE, renderApiTable, START_MARKER, withApiTable } from '../../scripts/gen-readme-api.js';
import { chatRequestSchema, completionRequestSchema, NOT_IMPLEMENTED_FIELDS } from '../../src/gateway/schemas.js';

describe('README API support table', () => {
  it('matches src/gateway/schemas.ts', () => {
    const readme = readFileSync(README_FILE, 'utf8');
    const start = readme.indexOf(START_MARKER);
    const end = readme.indexOf(END_MARKER);
    expect(start >= 0 && end > start, 'README.md lost its API table markers').toBe(true);
    const table = readme.slice(start + START_MARKER.length, end).trim();
    expect(table, 'README.md and src/gateway/schemas.ts disagree: run `npm run docs`').toBe(renderApiTable());
    expect(withApiTable(readme)).toBe(readme);
  });

  it('has a row for every accepted field of chat and completions, and names every refused one', () => {
    const table = renderApiTable();
    const refused = new Set(NOT_IMPLEMENTED_FIELDS);
    for (const shape of [chatRequestSchema.shape, completionRequestSchema.shape]) {
      for (const f of Object.keys(shape)) {
        if (refused.has(f)) continue;
        expect(table, f).toMatch(new RegExp(`^\\| \`${f}\` \\|`, 'm'));
      }
    }
    const refusedRow = table.split('\n').at(-1)!;
    for (const f of refused) expect(refusedRow).toContain(`\`${f}\``);
    // Ranges come from the schema itself.
    expect(table).toMatch(/^\| `n` \| integer ≥ 1, ≤ 16 \| integer ≥ 1, ≤ 16 \|/m);
    expect(table).toMatch(/^\| `max_tokens` \| integer ≥ 1 \| integer ≥ 0 \|/m);
  });
});
