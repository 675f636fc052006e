#!/usr/bin/env node
// ernie-edge CLI. The Node entry itself is adapters/node.ts: run compiled from dist/ when `npm run build`
// made it (the container images), else from the TypeScript sources through tsx's loader (a checkout:
// `node bin/ernie-edge.js serve`, `npm start` and `npx ernie-edge serve` work with no build step).
// ERNIE_EDGE_SOURCE=ts runs the sources even when dist/ exists (the test suite sets it: a dist/ left
// from an earlier build may be stale).
import { existsSync } from 'node:fs';

const dist = new URL('../dist/adapters/node.js', import.meta.url);
const useDist = process.env.ERNIE_EDGE_SOURCE !== 'ts' && existsSync(dist);
if (!useDist) {
  const tsx = await import('tsx/esm/api').catch(() => null);
  if (!tsx) {
    process.stderr.write('ernie-edge: dist/ is not built and tsx is not installed: run `npm run build` (or `npm ci` for a development checkout)\n');
    process.exit(1);
  }
  tsx.register();
}
const { runNode } = useDist ? await import(dist.href) : await import('../adapters/node.ts');
await runNode(process.argv.slice(2), process.env);
