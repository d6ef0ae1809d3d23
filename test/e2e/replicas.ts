import type { ServiceProcess } from '../helpers/child.js';

/** Bounds a broken start only (each replica compiles its TypeScript with tsx at start). */
export const START_TIMEOUT_MS = 90_000;

/** Leader election on, with short leases so that a takeover takes seconds, not the default 15 s. */
export const LEASE_ENV = {
  ROLLPLANE_LEADER_ELECT: 'true',
  ROLLPLANE_LEASE_DURATION_MS: '3000',
  ROLLPLANE_LEASE_RENEW_DEADLINE_MS: '2000',
  ROLLPLANE_LEASE_RETRY_PERIOD_MS: '300',
};

/** Whether the replica says it holds the lease (its `rollplane_leader` gauge). */
export async function isLeader(service: ServiceProcess): Promise<boolean> {
  const text = await (await fetch(service.url.replace(/\/graphql$/, '/metrics'))).text();
  return /^rollplane_leader\{[^}]*\} 1$/m.test(text);
}
