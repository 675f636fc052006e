// The scripts CI runs to build and run the images (container/ci/) and the Node 24 pass
// (scripts/test-node24.sh) pass shellcheck at style level, sourced files followed. They themselves run
// in CI (.ci/run), and container.e2e.test.ts drives build-image.sh.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROOT } from './container-engine.js';
import { which } from './deploy-helpers.js';

const shellcheck = which('shellcheck');
if (!shellcheck) console.warn('[ci-scripts] skipped: shellcheck is not installed (CI: apt-get install -y shellcheck)');
const scripts = [...readdirSync(`${ROOT}container/ci`).filter((f) => f.endsWith('.sh')).map((f) => `container/ci/${f}`), 'scripts/test-node24.sh'];

describe.skipIf(!shellcheck)('CI scripts', () => {
  it.each(scripts)('%s passes shellcheck', (script) => {
    const r = spawnSync(shellcheck!, ['-x', '-P', 'SCRIPTDIR', '--shell=bash', '--severity=style', script], { cwd: ROOT, encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
