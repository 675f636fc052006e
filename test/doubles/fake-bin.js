#!/usr/bin/env node
// bin/ernie-edge.js with the fake native engine injected (./fake-native-engine-factory.ts): the CLI the
// process tests run, so they need no model weights. `serve` runs this same file again for its sidecar
// child. FAKE_ENGINE_STEP_MS paces the fake's steps (default 0: one step per macrotask); FAKE_ENGINE_PACE=fixed
// keeps that pace on the wall clock (FakeNativeEngineOptions.pace), as the serving-path benchmark runs it.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../../src/cli/main.ts');
const { reexecWithServingFlags } = await import('../../src/cli/v8-pool.ts');
reexecWithServingFlags(process.argv.slice(2), process.env); // as bin/ernie-edge.js (adapters/node.ts) does
const { fakeNativeEngineFactory } = await import('./fake-native-engine-factory.ts');
const stepMs = Number(process.env.FAKE_ENGINE_STEP_MS ?? 0) || 0;
const pace = process.env.FAKE_ENGINE_PACE === 'fixed' ? 'fixed' : 'interval';
const code = await main(process.argv.slice(2), process.env, { engineFactory: fakeNativeEngineFactory({ stepMs, pace }), bin: fileURLToPath(import.meta.url) });
process.exit(code);
