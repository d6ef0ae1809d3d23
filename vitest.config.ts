import { createRequire } from 'node:module';
import { configDefaults, defineConfig } from 'vitest/config';
import { HEAVY_GLOBS } from './test/suites.js';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (main) and ESM (module) builds. Node loads the CJS one for every dependency (Apollo,
    // graphql-tools); Vite would give our own files the ESM one, and graphql refuses types from "another realm".
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    setupFiles: ['test/setup.ts'],
    // Says once, before the first result, when the tests comparing with ../shared/upstream are skipped (or fail on CI).
    globalSetup: ['test/globalSetup.ts'],
    // Integration tests start real servers and child processes; the machine has 2 cores.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two projects splitting test/ (ADR 43, test/suites.ts): `npm test` runs `fast`, `npm run test:heavy` runs
    // `heavy`, `npm run test:all` and CI both. `npx vitest run <file>` finds a file in whichever it belongs to.
    projects: [
      { extends: true, test: { name: 'fast', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...HEAVY_GLOBS] } },
      // End-to-end scenarios wait on conditions, each with a safety net against a hang; the test's own limit is a net
      // too, wide enough for a scenario of many phases on a loaded 2-core machine (one took 60 s at load 16).
      { extends: true, test: { name: 'heavy', include: HEAVY_GLOBS, testTimeout: 300_000 } },
    ],
  },
});
