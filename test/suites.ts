/**
 * Which test files `npm test` runs and which only `npm run test:heavy` (and CI, which runs both): ADR 43. A file is
 * heavy by what it needs, not by how long it took once, so the line does not move with the machine:
 * - it SIGKILLs the service at each step of a rollout and starts it again (the crash suites);
 * - it is an end-to-end scenario (test/e2e: the service as a child process or the whole app with the demo fleet,
 *   replicas, the packed tarball, attacks and floods);
 * - it needs a PostgreSQL server for all of its tests (files that test both stores keep their SQLite half in
 *   `npm test`; their PostgreSQL half runs wherever the binaries are, and always on CI);
 * - it drives Chromium (test/ui);
 * - it measures rollouts against a real Prometheus server (Debian's binary) for all of its tests.
 * A path ending in `/` takes the folder's whole tree. test/architecture/testSuites.test.ts checks each entry still
 * names something, and that a file using the crash or browser rigs is listed.
 */
export const HEAVY_SUITES = [
  'test/kinds/agentPool/controller/crash.test.ts',
  'test/kinds/nodeAgent/controller/crash.test.ts',
  'test/kinds/virtualCluster/controller/crash.test.ts',
  'test/e2e/',
  'test/store/postgres/',
  'test/store/postgresHarness.test.ts',
  'test/store/postgresServer.test.ts',
  'test/domain/launchAcrossReplicas.test.ts',
  'test/analysis/prometheusAnalysis.test.ts',
  'test/analysis/analysisGatePrometheus.test.ts',
  'test/analysis/alertGatePrometheus.test.ts',
  'test/start/demoPrometheus.test.ts',
  'test/ui/',
] as const;

/** The entries as vitest globs (project-relative). */
export const HEAVY_GLOBS = HEAVY_SUITES.map((entry) => (entry.endsWith('/') ? `${entry}**/*.test.ts` : entry));

/** Whether a test file (relative to the project root, `/`-separated) is heavy. */
export function isHeavy(file: string): boolean {
  return HEAVY_SUITES.some((entry) => (entry.endsWith('/') ? file.startsWith(entry) : file === entry));
}
