#!/usr/bin/env node
// `ernie-edge` over the fake native engine (test/doubles/fake-bin.js) with the CLI taken from another
// source tree: SERVE_PATH_SRC names the checkout whose src/cli/main.ts runs (default: this one). The
// serving-path benchmark (../serve-path-fake.ts) runs the code before and after a change in one run,
// both against this tree's fake engine. `serve` runs this same file again for its sidecar child, which
// inherits SERVE_PATH_SRC. SERVE_PATH_PROFILE=DIR: a CPU profile of each process (gateway, sidecar)
// written there at exit, as `node --cpu-prof` would (which NODE_OPTIONS may not carry).
// SERVE_PATH_DIST=1: that checkout's compiled CLI (dist/src/cli/main.js, `npm run build`), as the
// container images run it, instead of its sources through tsx.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const here = path.dirname(fileURLToPath(import.meta.url));
const root = process.env.SERVE_PATH_SRC ?? path.resolve(here, '../..');
const entry = process.env.SERVE_PATH_DIST === '1' ? 'dist/src/cli/main.js' : 'src/cli/main.ts';
const { main } = await import(pathToFileURL(path.join(root, entry)).href);
const { fakeNativeEngineFactory } = await import('../../test/doubles/fake-native-engine-factory.ts');
const profileDir = process.env.SERVE_PATH_PROFILE;
const session = profileDir ? new Session() : null;
if (session) {
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
}
const stepMs = Number(process.env.FAKE_ENGINE_STEP_MS ?? 0) || 0;
const code = await main(process.argv.slice(2), process.env, {
  engineFactory: fakeNativeEngineFactory({ stepMs, pace: 'fixed' }),
  bin: fileURLToPath(import.meta.url),
});
if (session) {
  session.post('Profiler.stop', (err, { profile }) => {
    if (!err) writeFileSync(path.join(profileDir, `${process.argv[2]}-${process.pid}.cpuprofile`), JSON.stringify(profile));
    process.exit(code);
  });
} else process.exit(code);
