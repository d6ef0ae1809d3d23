// Runs before the test files, in vitest's own process: says in one line, before the first result, why the tests that
// compare with ../shared/upstream will be skipped (each skipped block's name says it too), or that CI fails them.
import { NO_UPSTREAM, UPSTREAM_DIR, upstreamPresent, upstreamRequired } from './helpers/upstreamCrds.js';

/** Vitest runs a global setup once per project (fast, heavy): the line is said once per process. */
const SAID = Symbol.for('rollplane.tests.upstreamNotice');

export default function setup(): void {
  const global = globalThis as { [SAID]?: boolean };
  if (upstreamPresent() || global[SAID]) return;
  global[SAID] = true;
  if (upstreamRequired) console.warn(`rollplane tests: no upstream CRDs at ${UPSTREAM_DIR}; CI is set, so the tests comparing with them FAIL`);
  else console.warn(`rollplane tests: the tests comparing with the upstream CRDs are ${NO_UPSTREAM}`);
}
