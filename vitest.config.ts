import { defineConfig } from 'vitest/config';

// Kernel-touching tests create their own network namespaces; running files in
// parallel is safe, but a 2-core CI box gets slower, not faster, past 2 workers.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    exclude: ['node_modules/**'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
