import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, gql, wsClient } from '../../helpers/graphql.js';

/**
 * What an outside attacker (a fresh helper with the docs and the schema only) found after the first round of issue 18's
 * fixes: each probe, kept as a test.
 */
const ADMIN = 'admin-secret-for-attack-findings-0123456789';

describe('findings of the outside attack', () => {
  let app: TestApp;
  let viewer: string;
  beforeAll(async () => {
    app = await startTestApp({
      env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN, ROLLPLANE_MUTATIONS_PER_MINUTE: '60', ROLLPLANE_MUTATION_BURST: '5' },
    });
    viewer = (await app.domain.tokens.create({ name: 'viewer', role: 'viewer' })).secret;
  });
  afterAll(async () => {
    await app?.close();
  });
  const asViewer = () => ({ authorization: `Bearer ${viewer}` });

  it('F1: refuses a document of thousands of duplicate fields at parse time, before the quadratic validation', async () => {
    const query = `{ ${'serverInfo { version } '.repeat(8_000)} }`;
    const res = await gql(app.url, query, {}, asViewer());
    expect(res.status).toBe(400);
    expect(res.errors?.[0]?.message).toMatch(/Document contains more tha[nt] 2000 tokens/);
    const client = wsClient(app.url, { connectionParams: asViewer() });
    const sub = collect(client, `{ ${'serverInfo { version } '.repeat(2_400)} }`);
    await sub.waitFor(1);
    await client.dispose();
    expect(JSON.stringify(sub.errors)).toMatch(/more tha[nt] 2000 tokens/);
  });

  it('F3: a filter listing one state a thousand times is one condition, not a thousand parameters', async () => {
    const states = Array.from({ length: 1000 }, () => 'PENDING');
    const rollouts = await gql(app.url, 'query($s: [RolloutState!]) { rollouts(filter: { states: $s }) { totalCount } }', { s: states }, asViewer());
    expect(rollouts.errors, JSON.stringify(rollouts.errors?.slice(0, 2))).toBeUndefined();
    const types = Array.from({ length: 1000 }, () => 'AgentRecreated');
    const events = await gql(app.url, 'query($t: [EventType!]) { events(filter: { types: $t }) { edges { node { id } } } }', { t: types }, asViewer());
    expect(events.errors).toBeUndefined();
  });

  it('F4: answers malformed persisted-query extensions as bad requests, not internal errors', async () => {
    for (const persistedQuery of [{ version: 1, sha256Hash: 'x' }, { version: 2, sha256Hash: 'x' }, 5]) {
      const res = await fetch(app.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...asViewer() },
        body: JSON.stringify({ query: '{ serverInfo { version } }', extensions: { persistedQuery } }),
      });
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(persistedQuery)).toBe(400);
      expect(body.errors[0].extensions.code, JSON.stringify(persistedQuery)).not.toBe('INTERNAL_SERVER_ERROR');
    }
  });

  it('F6: audits mutations that fail validation or name no runnable operation, within the mutation budget', async () => {
    const deployer = (await app.domain.tokens.create({ name: 'prober', role: 'deployer' })).secret;
    const since = (await app.prisma.auditEntry.aggregate({ _max: { id: true } }))._max.id ?? 0;
    const auth = { authorization: `Bearer ${deployer}` };
    const invalid = await gql(app.url, 'mutation { createApiToken(input: { name: "evil", role: admin }) { secret bogus } }', {}, auth);
    expect(invalid.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const ambiguous = await fetch(app.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ query: 'mutation A { revokeApiToken(id: "x") { id } } mutation B { pauseRollout(id: "y") { id } }' }),
    });
    expect(ambiguous.status).toBe(400);
    const client = wsClient(app.url, { connectionParams: auth });
    const overWs = collect(client, 'mutation { revokeApiToken { id } }');
    await overWs.waitFor(1);
    await client.dispose();
    const entries = await app.prisma.auditEntry.findMany({ where: { id: { gt: since } }, orderBy: { id: 'asc' } });
    expect(entries.map((e) => [e.actor, e.operation, e.result])).toEqual([
      ['prober', 'createApiToken', 'GRAPHQL_VALIDATION_FAILED'],
      ['prober', 'revokeApiToken,pauseRollout', 'OPERATION_RESOLUTION_FAILURE'],
      ['prober', 'revokeApiToken', 'GRAPHQL_VALIDATION_FAILED'],
    ]);
    // They spend the mutation budget (burst 5): the probe cannot write rows without bound.
    for (let i = 0; i < 10; i++) await gql(app.url, 'mutation { createApiToken(input: { name: "evil", role: admin }) { bogus } }', {}, auth);
    expect(await app.prisma.auditEntry.count({ where: { id: { gt: since } } })).toBeLessThanOrEqual(6);
  });

  it('F8: closes WebSockets that never authenticate past a per-address cap', async () => {
    const sockets = Array.from({ length: 40 }, () => new WebSocket(app.url.replace(/^http/, 'ws'), 'graphql-transport-ws'));
    const closes = await Promise.all(sockets.map((s) => new Promise<number>((resolve) => s.once('close', (code) => resolve(code)))));
    expect(closes.filter((c) => c === 4429).length).toBe(8);
  });
});

describe('findings of the outside attack, without authentication', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_MUTATIONS_PER_MINUTE: '60', ROLLPLANE_MUTATION_BURST: '3' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  const fromAddress = (localAddress: string) =>
    new Promise<number>((resolve, reject) => {
      const req = request(app.url, { method: 'POST', localAddress, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ query: 'mutation { pauseRollout(id: "ro_none") { id } }' }));
    });

  it('F5: every loopback address shares one budget (127.0.0.2, 127.0.0.3 … are the same local caller)', async () => {
    const statuses: number[] = [];
    for (const address of ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6']) statuses.push(await fromAddress(address));
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(2);
  });
});
