#!/usr/bin/env node
// ernie-edge CLI. Runs the TypeScript sources directly through tsx's loader (no build step), so
// `node bin/ernie-edge.js serve`, `npm start` and `npx ernie-edge serve` all work from a checkout.
// The Node entry itself is adapters/node.ts.
import { register } from 'tsx/esm/api';

register();
const { runNode } = await import('../adapters/node.ts');
await runNode(process.argv.slice(2), process.env);
