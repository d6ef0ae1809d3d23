import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedRollout, startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, wsClient } from '../../helpers/graphql.js';

/** Issue 18, finding 2: mutations sent over WebSocket were never audited, accepted or refused. */
const ADMIN = 'admin-secret-for-ws-audit-tests-0123456789';

describe('mutations over WebSocket', () => {
  let app: TestApp;
  let deployer: string;
  let viewer: string;
  let rolloutId: string;

  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN } });
    deployer = (await app.domain.tokens.create({ name: 'ci', role: 'deployer' })).secret;
    viewer = (await app.domain.tokens.create({ name: 'wall', role: 'viewer' })).secret;
    rolloutId = await seedRollout(app);
  });
  afterAll(async () => {
    await app?.close();
  });

  async function run(secret: string, query: string, variables: Record<string, unknown> = {}) {
    const client = wsClient(app.url, { connectionParams: { authorization: `Bearer ${secret}` } });
    const result = collect(client, query, variables);
    await result.waitFor(1);
    await client.dispose();
    return result;
  }

  async function newEntries(since: number) {
    return app.prisma.auditEntry.findMany({ where: { id: { gt: since } }, orderBy: { id: 'asc' } });
  }

  async function lastId(): Promise<number> {
    return (await app.prisma.auditEntry.aggregate({ _max: { id: true } }))._max.id ?? 0;
  }

  it('audits an accepted mutation with who, what and from where', async () => {
    const since = await lastId();
    const done = await run(deployer, 'mutation($id: ID!) { ok: pauseRollout(id: $id, reason: "over ws") { state } }', { id: rolloutId });
    expect(done.results[0]).toEqual({ ok: { state: 'PAUSED' } });
    const entries = await newEntries(since);
    expect(entries.map((e) => [e.actor, e.role, e.operation, e.result])).toEqual([['ci', 'deployer', 'pauseRollout', 'OK']]);
    expect(entries[0]!.sourceAddr).toMatch(/127\.0\.0\.1/);
    expect(JSON.parse(entries[0]!.input)).toMatchObject({ variables: { id: rolloutId } });
  });

  it('audits refused mutations: wrong role and bad input', async () => {
    const since = await lastId();
    const forbidden = await run(viewer, `mutation { resumeRollout(id: "${rolloutId}") { state } }`);
    expect(JSON.stringify(forbidden.errors)).toContain('FORBIDDEN');
    const bad = await run(deployer, 'mutation { pauseRollout(id: "has spaces") { state } }');
    expect(JSON.stringify(bad.errors)).toContain('BAD_USER_INPUT');
    const entries = await newEntries(since);
    expect(entries.map((e) => [e.actor, e.operation, e.result])).toEqual([
      ['wall', 'resumeRollout', 'FORBIDDEN'],
      ['ci', 'pauseRollout', 'BAD_USER_INPUT'],
    ]);
    expect((await app.domain.rollouts.require(rolloutId)).state).toBe('PAUSED');
  });

  it('writes no entry for queries', async () => {
    const since = await lastId();
    const query = await run(viewer, '{ rollouts { totalCount } }');
    expect(query.results[0]).toMatchObject({ rollouts: { totalCount: 1 } });
    expect(await newEntries(since)).toEqual([]);
  });
});
