import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLLOUT_QUERY } from '../../src/cli/operations.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { AGENT_POOLS } from '../../src/kinds/agentPool/ui/queries.js';
import { DRIFT, EVENTS, ROLLOUT_DETAIL, ROLLOUT_TARGETS, ROLLOUTS } from '../../src/ui/client/queries.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scrape } from '../helpers/promText.js';

/** Runs of each case: the first executes; the next may be answered by the response cache (ADR 0026), when it keeps it. */
const RUNS = 3;

/**
 * Every document the UI and the CLI send, and each error and edge shape a black-box attack tried, answers exactly
 * alike on every run — data, errors, codes, paths, messages, key order — whichever path answers it (graphql-js, or
 * the response cache serving what graphql-js answered). Written for compiled execution (graphql-jit, ADR 0025),
 * which differed from graphql-js in each of the "Attack" cases below; kept when that path was deleted (ADR 0039).
 */
describe('every run of a query answers alike', () => {
  let app: TestApp;
  let rolloutId: string;

  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=3,nodes=2,clusters=1' } });
    for (const toVersion of ['v2', 'v3']) {
      const { rollout } = await app.domain.rollouts.create({
        kind: 'AGENT_POOL',
        fromVersion: 'v1',
        toVersion,
        selector: {},
        strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
        cause: { actor: 'ci-bot', commit: 'abc123', message: 'bump' },
        targets: [
          { namespace: 'default', name: 'net-1', fromVersion: 'v1', toVersion },
          { namespace: 'default', name: 'net-2', fromVersion: 'v1', toVersion, skipReason: 'held' },
        ],
      });
      rolloutId = rollout.id;
    }
  });
  afterAll(async () => {
    await app?.close();
  });

  async function executions(): Promise<Record<string, number>> {
    const samples = await scrape(`${app.baseUrl}/metrics`);
    const out: Record<string, number> = { interpreted: 0, cached: 0 };
    for (const s of samples) if (s.name === 'rollplane_graphql_executions_total') out[s.labels.executor!] = s.value;
    return out;
  }

  let casesRun = 0;
  /**
   * Sends one request RUNS times; returns every answer as status and body text, so that the comparison sees key order
   * too. The comment makes each case's text, and so its cache key, its own.
   */
  async function everyRun(query: string, variables?: Record<string, unknown>, operationName?: string): Promise<{ status: number; body: string }[]> {
    casesRun += 1;
    const body = JSON.stringify({ query: `${query}\n# case ${casesRun}`, variables, ...(operationName !== undefined ? { operationName } : {}) });
    const answers: { status: number; body: string }[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const res = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      answers.push({ status: res.status, body: await res.text() });
    }
    return answers;
  }

  /** Name, request, and whether the response cache may answer its later runs (a history query without errors). */
  const cases: [string, () => [string, Record<string, unknown>?, string?], 'cached'?][] = [
    ['the UI rollouts list', () => [String(ROLLOUTS), { first: 20 }], 'cached'],
    ['the UI rollout detail', () => [String(ROLLOUT_DETAIL), { id: rolloutId }], 'cached'],
    ['the UI rollout targets, one state', () => [String(ROLLOUT_TARGETS), { id: rolloutId, state: 'SKIPPED', first: 50 }], 'cached'],
    ['the UI events page', () => [String(EVENTS), { first: 50 }], 'cached'],
    ['the UI events of one pool', () => [String(EVENTS), { filter: { namespace: 'default', name: 'net-1' }, first: 50 }], 'cached'],
    // Cluster views: kept too, but any informer's change (pods settling in the simulated fleet) ends a kept answer.
    ['the UI agentPools page', () => [String(AGENT_POOLS), { first: 100 }]],
    ['the UI drift page', () => [String(DRIFT), { first: 50 }]],
    ['the CLI rollout(id) poll', () => [String(ROLLOUT_QUERY), { id: rolloutId }], 'cached'],
    ['an unknown rollout (null, no error)', () => [String(ROLLOUT_QUERY), { id: 'ro_missing' }], 'cached'],
    ['introspection', () => [getIntrospectionQuery()]],
    [
      'aliases, named and inline fragments, __typename',
      () => [
        `{ a: rollouts(first: 1) { ...R } b: rollouts(first: 2) { totalCount edges { cursor node { __typename ... on Rollout { id kind } } } } }
       fragment R on RolloutConnection { __typename pageInfo { hasNextPage } }`,
      ],
      'cached',
    ],
    [
      'one operation of several, chosen by operationName',
      () => ['query A { serverInfo { version } } query B { rollouts(first: 1) { totalCount } }', {}, 'B'],
      'cached',
    ],
    // Attack 5, finding 3: an unknown operationName was answered 500 (also with compilation off).
    ['an unknown operationName (400)', () => ['query A { serverInfo { version } }', {}, 'B']],
    ['NOT_FOUND from a mutation', () => ['mutation { pauseRollout(id: "ro_missing") { id } }']],
    // Attack 5, finding 2: with a skipped duplicate, graphql-jit kept the field's first position (another key order).
    [
      '@skip/@include',
      () => [
        'query($x: Boolean!) { workQueues { depth @include(if: $x) name depth } rollouts(first: 1) { totalCount @skip(if: true) totalCount } }',
        { x: false },
      ],
    ],
    // Attack 6, finding 1: an explicit null for a nullable variable with a default, in a non-null list position, was
    // passed to the resolver by graphql-jit; graphql-js refuses the argument.
    [
      'a variable with a default, sent as null into a non-null list',
      () => ['query($s: RolloutState = PAUSED) { rollouts(filter: { states: [PAUSED, $s] }) { totalCount } }', { s: null }],
    ],
    // Attack 6, finding 2: a non-null variable with a default, left out, made every compiled run report an error.
    ['a non-null variable with a default, left out', () => ['query($n: Int! = 1) { rollouts(first: $n) { totalCount } }', {}], 'cached'],
    ['BAD_USER_INPUT naming the field (page size)', () => ['{ rollouts(first: 5000) { totalCount } }']],
    ['BAD_USER_INPUT naming the field (cursor)', () => ['{ rollouts(after: "not-a-cursor") { totalCount } }']],
    // Attack 5, finding 1: graphql-jit reported every error under a nulled parent, graphql-js the first.
    [
      'two failing fields under one nulled parent',
      () => [`query($id: ID!) { rollout(id: $id) { targets(after: "x") { totalCount } events(after: "x") { edges { cursor } } } }`, { id: rolloutId }],
    ],
    [
      'a bad DateTime variable, with the scalar\u2019s reason',
      () => ['query($f: RolloutFilter) { rollouts(filter: $f) { totalCount } }', { f: { createdAfter: 'yesterday' } }],
    ],
    ['a missing required variable', () => ['query($id: ID!) { rollout(id: $id) { id } }', {}]],
    ['a variable of the wrong type', () => ['query($n: Int) { rollouts(first: $n) { totalCount } }', { n: 'ten' }]],
  ];

  for (const [name, request, cached] of cases) {
    it(name, async () => {
      const [query, variables, operationName] = request();
      const before = await executions();
      const answers = await everyRun(query, variables, operationName);
      const after = await executions();
      // Refused before execution (an unknown operation, bad variables): nothing ran; otherwise each run was answered
      // by graphql-js or by the cache, which served at least one of the later runs where it may keep the answer.
      const ran = after.interpreted - before.interpreted + (after.cached - before.cached);
      expect(ran === 0 || ran === RUNS).toBe(true);
      if (cached) expect(after.cached - before.cached).toBeGreaterThanOrEqual(1);
      if (name.includes('(400)')) expect(answers[0]!.status).toBe(400);
      for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
    });
  }

  it('says which variable and why', async () => {
    const answers = await everyRun('query($f: RolloutFilter) { rollouts(filter: $f) { totalCount } }', { f: { createdAfter: 'yesterday' } });
    for (const answer of answers) {
      const error = (JSON.parse(answer.body) as { errors: { message: string; extensions: { code: string } }[] }).errors[0]!;
      expect(error.extensions.code).toBe('BAD_USER_INPUT');
      expect(error.message).toContain('$f');
      expect(error.message).toContain('ISO 8601');
    }
  });
});
