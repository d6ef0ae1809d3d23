/**
 * Issue 34, attack 11, findings F5 and F7: bursts of `subscribe` messages. A viewer's 16 sockets each sending 99 at
 * once every second held /healthz for 1–2 s, because graphql-ws handled every message of one socket read in the same
 * turn of the event loop; and a client that completed its 99 operations and subscribed 99 new ones was closed "Too
 * many operations", because operations it had completed still counted until the server had finished ending them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from '../../helpers/graphql.js';
import { killIfRunning, startService, type ServiceProcess } from '../../helpers/child.js';
import { percentile, underAttack } from './probes.js';

const ADMIN = 'admin-secret-for-subscribe-bursts-0123456789';
const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-bursts-'));
let service: ServiceProcess | undefined;
let viewer = '';

beforeAll(async () => {
  service = await startService({
    DATABASE_URL: `file:${path.join(dir, 'rollplane.db')}`,
    ROLLPLANE_AUTH: 'on',
    ROLLPLANE_ADMIN_TOKEN: ADMIN,
    NODE_OPTIONS: '--max-old-space-size=512',
    LOG_LEVEL: 'error',
  });
  const created = await gql<{ createApiToken: { secret: string } }>(
    service.url,
    'mutation { createApiToken(input: { name: "burst-viewer", role: viewer }) { secret } }',
    {},
    { authorization: `Bearer ${ADMIN}` },
  );
  if (!created.data) throw new Error(JSON.stringify(created.errors));
  viewer = created.data.createApiToken.secret;
}, 60_000);

afterAll(async () => {
  await killIfRunning(service);
  rmSync(dir, { recursive: true, force: true });
});

describe('a viewer sending bursts of subscribe messages', () => {
  it('(F5) does not stall the process, and (F7) is not closed for operations it has completed', async () => {
    const { url } = service!;
    const { healthz: h, control: c, figures, report } = await underAttack('subscribeBurst.ts', [url, viewer], `${url.replace(/\/graphql$/, '')}/healthz`);
    console.log(`/healthz under bursts: ${figures}`);
    console.log(`attacker: ${report}`);
    // Beyond what the machine's load costs any process: the Deployment's liveness probe gives up after 1 s.
    expect(percentile(h, 90) - percentile(c, 90), figures).toBeLessThan(100);
    expect(percentile(h, 99) - percentile(c, 99), figures).toBeLessThan(1_000);
    const stats = JSON.parse(report) as { subscribes: number; closes: Record<string, number> };
    // The bursts were sent, and no socket was closed for holding too many operations.
    expect(stats.subscribes).toBeGreaterThan(16 * 99 * 3);
    expect(
      Object.keys(stats.closes).filter((close) => close.startsWith('4429')),
      JSON.stringify(stats.closes),
    ).toEqual([]);
  }, 300_000);
});
