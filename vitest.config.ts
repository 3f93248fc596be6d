// Test runner configuration: unit and integration suites under test/.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    exclude: ['test/stress/**', 'test/e2e/**', 'node_modules/**'],
    testTimeout: 60_000,
    pool: 'forks',
  },
});
