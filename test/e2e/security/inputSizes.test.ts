import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_MIN_COST } from '../../../src/graphql/guard.js';
import { MAX_REPEATED_SELECTIONS } from '../../../src/graphql/repeatedSelections.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, gql, wsClient } from '../../helpers/graphql.js';

/**
 * Issue 18, finding 4: `cause.*` on the bump mutations had no length limit (10 rollouts with 1 MB messages and one
 * 30-alias query crashed a heap-capped server), and queries had no rate limit. Every input is now bounded at the edge,
 * on both transports, and each caller spends a budget of estimated query cost.
 */
const BIG = 'm'.repeat(100_000);
const bumps: [string, string][] = [
  ['bumpAgentImage', 'mutation($c: CauseInput) { bumpAgentImage(input: { image: "rancher/agent:v9", cause: $c, dryRun: true }) { created } }'],
  [
    'bumpNodeAgentImage',
    'mutation($c: CauseInput) { bumpNodeAgentImage(input: { namespace: "ns", name: "ds", image: "caa:v9", cause: $c, dryRun: true }) { created } }',
  ],
  [
    'bumpClusterVersion',
    'mutation($c: CauseInput) { bumpClusterVersion(input: { clusterVersion: "cv", apiServer: { image: "apiserver:v9" }, cause: $c, dryRun: true }) { created } }',
  ],
  ['rollbackRollout', 'mutation($c: CauseInput) { rollbackRollout(id: "ro_x", input: { cause: $c }) { id } }'],
];

describe('input sizes', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_MUTATIONS_PER_MINUTE: '100000', ROLLPLANE_MUTATION_BURST: '100000' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  const counts = async () => ({
    rollouts: await app.prisma.rollout.count(),
    events: await app.prisma.event.count(),
    keys: await app.prisma.idempotencyKey.count(),
  });

  it.each(bumps)('%s refuses an oversized cause field over HTTP, naming it, and writes nothing', async (field, mutation) => {
    const before = await counts();
    for (const [key, max] of [
      ['message', 2000],
      ['runUrl', 2000],
      ['actor', 200],
      ['commit', 200],
    ] as const) {
      const value = key === 'runUrl' ? `https://ci.example/${BIG}` : BIG;
      const res = await gql(app.url, mutation, { c: { [key]: value } });
      expect(res.errors?.[0]?.extensions, `${field} ${key}`).toMatchObject({ code: 'BAD_USER_INPUT', field: `input.cause.${key}` });
      expect(res.errors?.[0]?.message).toContain(`at most ${max} characters`);
    }
    expect(await counts()).toEqual(before);
  });

  it('refuses the same over WebSocket', async () => {
    const client = wsClient(app.url);
    const sub = collect(client, bumps[0]![1], { c: { message: BIG } });
    await sub.waitFor(1);
    await client.dispose();
    expect(JSON.stringify(sub.errors)).toContain('input.cause.message');
  });

  it('accepts a cause at the limits, and only http(s) run URLs', async () => {
    const ok = await gql(app.url, bumps[0]![1], { c: { message: 'm'.repeat(2000), actor: 'a'.repeat(200), runUrl: 'https://ci.example/run/1' } });
    // The empty fleet has no pools to plan for; whatever the answer, it is not about the cause.
    expect(JSON.stringify(ok.errors ?? [])).not.toContain('cause');
    for (const url of ['javascript:alert(1)', 'data:text/html,x', 'ci.example/run/1']) {
      const res = await gql(app.url, bumps[0]![1], { c: { runUrl: url } });
      expect(res.errors?.[0]?.extensions, url).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.cause.runUrl' });
    }
  });

  it('bounds every other string and list input too', async () => {
    const long = await gql(app.url, 'query($s: String) { rollouts(filter: { search: $s }) { totalCount } }', { s: 'x'.repeat(201) });
    expect(long.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'filter.search' });
    const image = await gql(app.url, 'mutation($i: String!) { bumpAgentImage(input: { image: $i, dryRun: true }) { created } }', { i: 'a'.repeat(5000) });
    expect(image.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.image' });
    const list = await gql(app.url, 'mutation($n: [String!]) { bumpAgentImage(input: { image: "a/b:v1", pools: { names: $n }, dryRun: true }) { created } }', {
      n: Array.from({ length: 1001 }, (_, i) => `p${i}`),
    });
    expect(list.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.pools.names' });
  });

  it('refuses a NUL character in any string input, JSON included, naming the field (PostgreSQL cannot store one: it was an INTERNAL_SERVER_ERROR after the input was accepted)', async () => {
    const before = await counts();
    const key = await gql(app.url, 'mutation($k: String) { bumpAgentImage(input: { image: "a/b:v1", idempotencyKey: $k }) { created } }', { k: 'a\u0000b' });
    expect(key.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.idempotencyKey' });
    expect(key.errors?.[0]?.message).toContain('NUL');
    const cause = await gql(app.url, bumps[0]![1], { c: { message: 'deploy\u0000' } });
    expect(cause.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.cause.message' });
    const query = 'mutation($p: JSON) { bumpClusterVersion(input: { clusterVersion: "cv", specPatch: $p, dryRun: true }) { created } }';
    for (const patch of [{ a: 'x\u0000' }, { 'k\u0000': 1 }]) {
      const res = await gql(app.url, query, { p: patch });
      expect(res.errors?.[0]?.extensions, JSON.stringify(patch)).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.specPatch' });
    }
    expect(await counts()).toEqual(before);
  });

  it('refuses a lone surrogate in any string input (issue 34, attack 11, F8: SQLite stored ill-formed UTF-8, PostgreSQL made two keys one)', async () => {
    const before = await counts();
    for (const k of ['k\ud800', 'q\udbff', 'x\udc00y']) {
      // Sent as JSON escapes, as the attacker did: JSON.stringify writes a lone surrogate as \udXXX.
      const key = await gql(app.url, 'mutation($k: String) { bumpAgentImage(input: { image: "a/b:v1", idempotencyKey: $k }) { created } }', { k });
      expect(key.errors?.[0]?.extensions, JSON.stringify(k)).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.idempotencyKey' });
      expect(key.errors?.[0]?.message).toContain('lone surrogate');
    }
    const query = 'mutation($p: JSON) { bumpClusterVersion(input: { clusterVersion: "cv", specPatch: $p, dryRun: true }) { created } }';
    for (const patch of [{ a: 'x\ud800' }, { 'k\udfff': 1 }]) {
      const res = await gql(app.url, query, { p: patch });
      expect(res.errors?.[0]?.extensions, JSON.stringify(patch)).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.specPatch' });
    }
    // A well-formed pair (an emoji) is text like any other.
    const pair = await gql(app.url, 'mutation($k: String) { bumpAgentImage(input: { image: "a/b:v1", idempotencyKey: $k, dryRun: true }) { created } }', {
      k: 'ci-\ud83d\ude80',
    });
    expect(pair.errors?.[0]?.extensions?.field).not.toBe('input.idempotencyKey');
    expect(await counts()).toEqual(before);
  });

  it('refuses a deeply nested specPatch with BAD_USER_INPUT (was a RangeError and INTERNAL_SERVER_ERROR)', async () => {
    // Written by hand: JSON.stringify itself overflows the stack on such an object.
    const patch = `${'{"a":'.repeat(5000)}{}${'}'.repeat(5000)}`;
    const query = 'mutation($p: JSON) { bumpClusterVersion(input: { clusterVersion: "cv", specPatch: $p, dryRun: true }) { created } }';
    const res = await fetch(app.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":${JSON.stringify(query)},"variables":{"p":${patch}}}`,
    });
    expect(res.status).toBeLessThan(500);
    const body = (await res.json()) as any;
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.specPatch' });
  });
});

describe('the query-cost budget per caller', () => {
  let app: TestApp;
  beforeAll(async () => {
    // A budget of two maximal queries, refilled at 1/s: small enough to see, as a hostile client would.
    app = await startTestApp({
      env: {
        ROLLPLANE_AUTH: 'on',
        ROLLPLANE_ADMIN_TOKEN: 'admin-secret-for-cost-tests-0123456789',
        ROLLPLANE_MAX_QUERY_COST: '20000',
        ROLLPLANE_QUERY_COST_BURST: '40000',
        ROLLPLANE_QUERY_COST_PER_MINUTE: '60',
      },
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers 429 with Retry-After once a caller has spent it, while another caller is unaffected', async () => {
    const heavy = (await app.domain.tokens.create({ name: 'heavy', role: 'viewer' })).secret;
    const other = (await app.domain.tokens.create({ name: 'other', role: 'viewer' })).secret;
    const query = `{ ${Array.from({ length: 20 }, (_, i) => `r${i}: rollouts(first: 100) { edges { node { id state kind toVersion fromVersion } } }`).join(' ')} }`;
    const statuses: number[] = [];
    let refused: { retryAfter: string | null; body: any } | undefined;
    for (let i = 0; i < 4; i++) {
      const res = await fetch(app.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${heavy}` },
        body: JSON.stringify({ query }),
      });
      statuses.push(res.status);
      if (res.status === 429) refused = { retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any };
    }
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses.slice(2)).toEqual([429, 429]);
    expect(Number(refused!.retryAfter)).toBeGreaterThan(0);
    expect(refused!.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    const cheap = await gql(app.url, '{ serverInfo { version } }', {}, { authorization: `Bearer ${other}` });
    expect(cheap.status).toBe(200);
  });

  it('charges every operation at least OPERATION_MIN_COST, so cheap operations cannot take a core (attack 11, F9)', async () => {
    const chatty = (await app.domain.tokens.create({ name: 'chatty', role: 'viewer' })).secret;
    let answered = 0;
    let refused = 0;
    // 1,000 operations of estimated cost 1, eight at a time: before, the 40,000 burst let 40,000 of them through.
    for (let i = 0; i < 1_000; i += 8) {
      const statuses = await Promise.all(
        Array.from({ length: 8 }, () =>
          fetch(app.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${chatty}` },
            body: JSON.stringify({ query: '{ __typename }' }),
          }).then(async (res) => (await res.text(), res.status)),
        ),
      );
      answered += statuses.filter((status) => status === 200).length;
      refused += statuses.filter((status) => status === 429).length;
    }
    // The burst holds 40,000 / 50 = 800 of them, plus what refills at 1 unit a second while they run.
    const allowed = 40_000 / OPERATION_MIN_COST;
    expect(answered).toBeGreaterThanOrEqual(allowed);
    expect(answered).toBeLessThan(allowed + 20);
    expect(answered + refused).toBe(1_000);
  });

  it('charges documents that fail to parse or validate too, before parsing them (attack 12, F1)', async () => {
    const invalid = (await app.domain.tokens.create({ name: 'invalid', role: 'viewer' })).secret;
    const statuses = new Map<number, number>();
    // Before, they were free: a flood of slow-to-validate documents never ran out of budget.
    for (let i = 0; i < 1_000; i += 8) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, j) =>
          fetch(app.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${invalid}` },
            body: JSON.stringify({ query: j % 2 === 0 ? '{ noSuchField }' : '{ serverInfo {' }),
          }).then(async (res) => (await res.text(), res.status)),
        ),
      );
      for (const status of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    const allowed = 40_000 / OPERATION_MIN_COST;
    expect(statuses.get(400) ?? 0).toBeGreaterThanOrEqual(allowed);
    expect(statuses.get(400) ?? 0).toBeLessThan(allowed + 20);
    expect(statuses.get(429)).toBe(1_000 - (statuses.get(400) ?? 0));
  });
});

describe('documents whose validation is quadratic (attack 12, F2)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });
  // 400 of them took 100–180 ms each to validate for an estimated cost of ~800; a viewer held /healthz for 2.7 s.
  const repeated = `{ ${Array.from({ length: MAX_REPEATED_SELECTIONS + 1 }, () => 'serverInfo { __typename }').join(' ')} }`;

  it('refuses a response name selected too often, over HTTP (POST and GET) and WebSocket, naming it', async () => {
    const post = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: repeated }) });
    expect(post.status).toBe(400);
    const postBody = (await post.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
    expect(postBody.errors[0]!.extensions.code).toBe('BAD_USER_INPUT');
    expect(postBody.errors[0]!.message).toContain('"serverInfo" is selected 21 times');
    const get = await fetch(`${app.url}?query=${encodeURIComponent(repeated)}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(get.status).toBe(400);
    const sub = collect(wsClient(app.url), `subscription ${repeated.replace('{ serverInfo', '{ events { id } serverInfo')}`);
    await sub.waitFor(1);
    expect(JSON.stringify(sub.errors)).toContain('BAD_USER_INPUT');
  });

  it('still answers the same field selected up to the limit', async () => {
    const fine = `{ ${Array.from({ length: MAX_REPEATED_SELECTIONS }, () => 'serverInfo { __typename }').join(' ')} }`;
    const answer = await gql(app.url, fine);
    expect(answer.errors).toBeUndefined();
  });
});
