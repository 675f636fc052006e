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
  },
});
