#!/usr/bin/env node
// ernie-edge CLI. Runs the TypeScript sources directly through tsx's loader (no build step), so
// `node bin/ernie-edge.js serve`, `npm start` and `npx ernie-edge serve` all work from a checkout.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
const code = await main(process.argv.slice(2), process.env);
// Exit explicitly: a drained server may still hold idle handles (timers, a closed client's socket).
process.exit(code);
