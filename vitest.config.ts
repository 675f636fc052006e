import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Engine tests load large checkpoints; keep them in separate forks so memory is returned.
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // Two cores in CI: one file at a time keeps native thread pools from fighting.
    fileParallelism: false,
    // An exception thrown in a native callback (a step sink) fails the run as an unhandled error
    // instead of a deprecation warning that hides it.
    execArgv: ['--force-node-api-uncaught-exceptions-policy=true'],
    // Spawned CLIs (bin/ernie-edge.js) run the sources under test, never a dist/ left by `npm run build`.
    env: { ERNIE_EDGE_SOURCE: 'ts' },
  },
});
