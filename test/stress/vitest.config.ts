// Stress suite configuration (npm run test:stress): heavy runs one file at a time, gc exposed, invariant checker on.
import { defineConfig } from 'vitest/config';

const soakMinutes = Number(process.env.SOAK_MINUTES ?? 10);

export default defineConfig({
  test: {
    include: ['test/stress/**/*.test.ts'],
    pool: 'forks',
    // Heap readings need a real full collection; the cluster checks every invariant after every batch.
    execArgv: ['--expose-gc'],
    env: { TOKENROUTER_CHECK_INVARIANTS: '1' },
    fileParallelism: false,
    testTimeout: Math.max(10, soakMinutes + 10) * 60_000,
    hookTimeout: 120_000,
  },
});
