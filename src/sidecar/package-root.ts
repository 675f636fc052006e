// The package's root directory: where package.json, bin/, native/build/ and the tokenizer fixtures of the
// embedded default model live. Modules run from src/ (tsx, a checkout) or from dist/src/ (`npm run build`,
// the container images), so files outside the compiled tree are found from here, never by counting `../`.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const PACKAGE_ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)));

/** A path inside the package, e.g. packagePath('native', 'build', 'Release', 'ernie_native.node'). */
export const packagePath = (...parts: string[]): string => path.join(PACKAGE_ROOT, ...parts);
