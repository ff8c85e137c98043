import { defineConfig } from 'vitest/config';
export default defineConfig({ test: { include: ['test/e2e/**/*.test.ts'], globalSetup: ['/tmp/tkdev/setup.mjs'], testTimeout: 120_000, hookTimeout: 120_000, pool: 'forks', maxWorkers: 2 } });
