// The layering the design card asks for, checked on every import in the tree: adapters are entries
// that depend on src/, never the other way round, and test doubles (test/) are reachable from
// nothing that ships (src/, adapters/, bin/).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

/** Every relative module a file imports (static, dynamic, re-export), as a path from the root. */
function imports(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const specs = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
  return specs.map((s) => path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), s)));
}

const violations = (from: string[], forbidden: RegExp) =>
  from.flatMap((f) => imports(f).filter((target) => forbidden.test(target)).map((target) => `${f} → ${target}`));

describe('layering', () => {
  it('the import scan sees imports (src/cli/main.ts imports its sidecar role)', () => {
    expect(imports('src/cli/main.ts')).toContain('src/cli/sidecar-role.js');
    expect(imports('bin/ernie-edge.js')).toContain('adapters/node.ts');
  });

  it('nothing under src/ imports an adapter', () => {
    expect(violations(files('src'), /^adapters\//)).toEqual([]);
  });

  it('nothing that ships imports from test/', () => {
    expect(violations([...files('src'), ...files('adapters'), ...files('bin')], /^test\//)).toEqual([]);
  });
});
