// adapters/node.ts is the Node entry: bin/ernie-edge.js runs it, it runs the CLI and exits with the
// CLI's code (0 ok, 2 usage error).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BIN } from '../cli/process-helpers.js';

const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('the Node entry (bin/ernie-edge.js → adapters/node.ts)', () => {
  it('runs the CLI and exits with its code', () => {
    expect(readFileSync(BIN, 'utf8')).toMatch(/import\('\.\.\/adapters\/node\.ts'\)/);
    const ok = spawnSync(process.execPath, [BIN, '--version'], { encoding: 'utf8', timeout: 60_000 });
    expect([ok.status, ok.stdout.trim()]).toEqual([0, version]);
    const usage = spawnSync(process.execPath, [BIN, 'nonsense'], { encoding: 'utf8', timeout: 60_000 });
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/unknown command 'nonsense'/);
  });
});
