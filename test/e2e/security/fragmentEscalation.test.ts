import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSchema } from '../../../src/graphql/schema.js';
import { ROLLOUT_KIND_MODULES } from '../../../src/kinds/index.js';
import { seedRollout, startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, gql, wsClient } from '../../helpers/graphql.js';
import { privilegedCases } from '../../helpers/privilegedShapes.js';

/**
 * Issue 18, finding 1 (critical): the role check read only root fields written directly in the operation, so
 * `mutation { ... on Mutation { createApiToken(...) } }` gave a deployer an admin token. Every privileged root field,
 * in every shape that hides it, over both transports, for every role that may not use it: refused, nothing written.
 */
const ADMIN = 'admin-secret-for-escalation-tests-0123456789';
const cases = privilegedCases(buildSchema(ROLLOUT_KIND_MODULES));

describe(`privileged fields hidden in fragments (${cases.length} shapes per transport)`, () => {
  let app: TestApp;
  const secrets: Record<string, string> = {};

  beforeAll(async () => {
    app = await startTestApp({
      env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN, ROLLPLANE_MUTATIONS_PER_MINUTE: '100000', ROLLPLANE_MUTATION_BURST: '100000' },
    });
    for (const role of ['viewer', 'deployer'] as const) secrets[role] = (await app.domain.tokens.create({ name: role, role })).secret;
    await seedRollout(app);
  });
  afterAll(async () => {
    await app?.close();
  });

  async function snapshot(): Promise<string> {
    const p = app.prisma;
    return JSON.stringify({
      rollouts: await p.rollout.findMany({ orderBy: { id: 'asc' } }),
      events: await p.event.count(),
      tokens: (await p.apiToken.findMany({ orderBy: { id: 'asc' } })).map(({ lastUsedAt: _l, ...rest }) => rest),
    });
  }

  it('covers every admin field and every mutation', () => {
    const fields = new Set(cases.map((c) => c.field));
    for (const field of ['createApiToken', 'revokeApiToken', 'apiTokens', 'auditEntries', 'bumpAgentImage', 'pauseRollout', 'rollbackRollout'])
      expect(fields).toContain(field);
  });

  it('refuses each over HTTP with FORBIDDEN, returns no data and writes nothing but FORBIDDEN audit entries naming the field', async () => {
    const before = await snapshot();
    const auditBefore = await app.prisma.auditEntry.aggregate({ _max: { id: true } });
    const leaks: string[] = [];
    for (const c of cases) {
      const res = await gql(app.url, c.query, c.variables, { authorization: `Bearer ${secrets[c.role]}` });
      const code = res.errors?.[0]?.extensions?.code;
      if (code !== 'FORBIDDEN') leaks.push(`${c.name}: ${code ?? 'no error'} ${JSON.stringify(res.data)}`);
      else if (res.data && Object.values(res.data).some((v) => v !== null)) leaks.push(`${c.name}: returned data ${JSON.stringify(res.data)}`);
    }
    expect(leaks).toEqual([]);
    expect(await snapshot()).toBe(before);
    const entries = await app.prisma.auditEntry.findMany({ where: { id: { gt: auditBefore._max.id ?? 0 } } });
    const mutationCases = cases.filter((c) => c.type === 'mutation');
    expect(entries).toHaveLength(mutationCases.length);
    expect(entries.every((e) => e.result === 'FORBIDDEN')).toBe(true);
    expect(new Set(entries.map((e) => e.operation))).toEqual(new Set(mutationCases.map((c) => c.field)));
  });

  it('refuses each over WebSocket the same way and audits the refused mutations there too', async () => {
    const before = await snapshot();
    const auditBefore = (await app.prisma.auditEntry.aggregate({ _max: { id: true } }))._max.id ?? 0;
    const leaks: string[] = [];
    const clients = {
      viewer: wsClient(app.url, { connectionParams: { authorization: `Bearer ${secrets.viewer}` } }),
      deployer: wsClient(app.url, { connectionParams: { authorization: `Bearer ${secrets.deployer}` } }),
    };
    for (const c of cases) {
      const sub = collect(clients[c.role as 'viewer' | 'deployer'], c.query, c.variables);
      await sub.waitFor(1, 5000);
      const text = JSON.stringify(sub.errors);
      if (!text.includes('FORBIDDEN')) leaks.push(`${c.name}: ${text} ${JSON.stringify(sub.results)}`);
      if (sub.results.some((r) => r && Object.values(r as object).some((v) => v !== null))) leaks.push(`${c.name}: returned data`);
    }
    await Promise.all(Object.values(clients).map((c) => c.dispose()));
    expect(leaks).toEqual([]);
    expect(await snapshot()).toBe(before);
    const entries = await app.prisma.auditEntry.findMany({ where: { id: { gt: auditBefore } } });
    expect(entries).toHaveLength(cases.filter((c) => c.type === 'mutation').length);
    expect(entries.every((e) => e.result === 'FORBIDDEN' && e.operation !== 'mutation')).toBe(true);
  });

  it('still lets the admin use the same shapes', async () => {
    const res = await gql(
      app.url,
      'mutation { ...M } fragment M on Mutation { createApiToken(input: { name: "made-by-admin", role: viewer }) { token { role } } }',
      {},
      { authorization: `Bearer ${ADMIN}` },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.createApiToken.token.role).toBe('viewer');
  });
});
