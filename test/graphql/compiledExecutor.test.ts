import { getIntrospectionQuery, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLLOUT_QUERY } from '../../src/cli/operations.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { DEFAULT_COMPILE_AFTER, expandedFieldCount, MAX_COMPILED_FIELDS } from '../../src/graphql/compiledExecutor.js';
import { AGENT_POOLS, DRIFT, EVENTS, ROLLOUT_DETAIL, ROLLOUT_TARGETS, ROLLOUTS } from '../../src/ui/client/queries.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { scrape } from '../helpers/promText.js';

/**
 * A document is interpreted by graphql-js for its first runs and compiled (graphql-jit) after that. Both must answer
 * exactly alike — data, errors, codes, paths, messages — or a client would see an answer change on the third request.
 * Each case is sent until it has run compiled, and every answer is compared with the first (interpreted) one.
 */
describe('compiled execution answers exactly as graphql-js does', () => {
  let app: TestApp;
  let rolloutId: string;

  beforeAll(async () => {
    // The response cache off: every request must run, so that each run's executor can be counted and compared.
    app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=3,nodes=2,clusters=1', ROLLPLANE_RESPONSE_CACHE_MB: '0' } });
    for (const toVersion of ['v2', 'v3']) {
      const { rollout } = await app.domain.rollouts.create({
        kind: 'AGENT_POOL',
        fromVersion: 'v1',
        toVersion,
        selector: {},
        strategy: defaultStrategy('AGENT_POOL'),
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
    const out: Record<string, number> = { compiled: 0, interpreted: 0, fallback: 0 };
    for (const s of samples) if (s.name === 'rollplane_graphql_executions_total') out[s.labels.executor!] = s.value;
    return out;
  }

  let casesRun = 0;
  /**
   * Sends one request until it has run compiled (or would have); returns every answer as status and body text, so
   * that the comparison sees key order too. The comment makes each case's text, and so Apollo's parsed document
   * (which is what counts runs), its own.
   */
  async function everyRun(query: string, variables?: Record<string, unknown>, operationName?: string): Promise<{ status: number; body: string }[]> {
    casesRun += 1;
    const body = JSON.stringify({ query: `${query}\n# case ${casesRun}`, variables, ...(operationName !== undefined ? { operationName } : {}) });
    const answers: { status: number; body: string }[] = [];
    for (let run = 0; run <= DEFAULT_COMPILE_AFTER; run += 1) {
      const res = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      answers.push({ status: res.status, body: await res.text() });
    }
    return answers;
  }

  type LastRun = 'compiled' | 'interpreted' | 'fallback';
  const cases: [string, () => [string, Record<string, unknown>?, string?], LastRun?][] = [
    ['the UI rollouts list', () => [String(ROLLOUTS), { first: 20 }]],
    ['the UI rollout detail', () => [String(ROLLOUT_DETAIL), { id: rolloutId }]],
    ['the UI rollout targets, one state', () => [String(ROLLOUT_TARGETS), { id: rolloutId, state: 'SKIPPED', first: 50 }]],
    ['the UI events page', () => [String(EVENTS), { first: 50 }]],
    ['the UI events of one pool', () => [String(EVENTS), { filter: { namespace: 'default', name: 'net-1' }, first: 50 }]],
    ['the UI agentPools page', () => [String(AGENT_POOLS), { first: 100 }]],
    ['the UI drift page', () => [String(DRIFT), { first: 50 }]],
    ['the CLI rollout(id) poll', () => [String(ROLLOUT_QUERY), { id: rolloutId }]],
    ['an unknown rollout (null, no error)', () => [String(ROLLOUT_QUERY), { id: 'ro_missing' }]],
    ['introspection', () => [getIntrospectionQuery()]],
    [
      'aliases, named and inline fragments, __typename',
      () => [
        `{ a: rollouts(first: 1) { ...R } b: rollouts(first: 2) { totalCount edges { cursor node { __typename ... on Rollout { id kind } } } } }
       fragment R on RolloutConnection { __typename pageInfo { hasNextPage } }`,
      ],
    ],
    ['one operation of several, chosen by operationName', () => ['query A { serverInfo { version } } query B { rollouts(first: 1) { totalCount } }', {}, 'B']],
    // Attack 5, finding 3: an unknown operationName was answered 500 (also with compilation off).
    ['an unknown operationName (400)', () => ['query A { serverInfo { version } }', {}, 'B'], 'interpreted'],
    ['NOT_FOUND from a mutation (mutations are never compiled)', () => ['mutation { pauseRollout(id: "ro_missing") { id } }'], 'interpreted'],
    // Attack 5, finding 2: with a skipped duplicate, graphql-jit kept the field's first position (another key order).
    [
      '@skip/@include (never compiled)',
      () => [
        'query($x: Boolean!) { workQueues { depth @include(if: $x) name depth } rollouts(first: 1) { totalCount @skip(if: true) totalCount } }',
        { x: false },
      ],
      'interpreted',
    ],
    // Attack 6, finding 1: an explicit null for a nullable variable with a default, in a non-null list position, was
    // passed to the resolver by graphql-jit; graphql-js refuses the argument.
    [
      'a variable with a default, sent as null into a non-null list (never compiled)',
      () => ['query($s: RolloutState = PAUSED) { rollouts(filter: { states: [PAUSED, $s] }) { totalCount } }', { s: null }],
      'interpreted',
    ],
    // Attack 6, finding 2: a non-null variable with a default, left out, made every compiled run fall back.
    ['a non-null variable with a default, left out (never compiled)', () => ['query($n: Int! = 1) { rollouts(first: $n) { totalCount } }', {}], 'interpreted'],
    ['BAD_USER_INPUT naming the field (page size)', () => ['{ rollouts(first: 5000) { totalCount } }'], 'fallback'],
    ['BAD_USER_INPUT naming the field (cursor)', () => ['{ rollouts(after: "not-a-cursor") { totalCount } }'], 'fallback'],
    // Attack 5, finding 1: graphql-jit reported every error under a nulled parent, graphql-js the first.
    [
      'two failing fields under one nulled parent',
      () => [`query($id: ID!) { rollout(id: $id) { targets(after: "x") { totalCount } events(after: "x") { edges { cursor } } } }`, { id: rolloutId }],
      'fallback',
    ],
    [
      'a bad DateTime variable, with the scalar\u2019s reason',
      () => ['query($f: RolloutFilter) { rollouts(filter: $f) { totalCount } }', { f: { createdAfter: 'yesterday' } }],
      'fallback',
    ],
    ['a missing required variable', () => ['query($id: ID!) { rollout(id: $id) { id } }', {}], 'fallback'],
    ['a variable of the wrong type', () => ['query($n: Int) { rollouts(first: $n) { totalCount } }', { n: 'ten' }], 'fallback'],
  ];

  for (const [name, request, lastRun = 'compiled'] of cases) {
    it(name, async () => {
      const [query, variables, operationName] = request();
      const before = await executions();
      const answers = await everyRun(query, variables, operationName);
      const after = await executions();
      // The first runs were interpreted; the last one compiled (or, for an error, compiled and answered by graphql-js
      // after all), so the comparison below compares the two executors, byte for byte.
      expect(after.interpreted - before.interpreted).toBe(DEFAULT_COMPILE_AFTER + (lastRun === 'interpreted' ? 1 : 0));
      expect(after.compiled - before.compiled).toBe(lastRun === 'compiled' ? 1 : 0);
      expect(after.fallback - before.fallback).toBe(lastRun === 'fallback' ? 1 : 0);
      if (name.includes('(400)')) expect(answers[0]!.status).toBe(400);
      for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
    });
  }

  // Attack 5, finding 4: chained fragments within every query limit expanded to thousands of fields, and compiling
  // one such document blocked the event loop for 1–2 s.
  it('never compiles a document whose fragments expand past the field limit, however few fields it writes', async () => {
    const chain = Array.from({ length: 6 }, (_, i) => `fragment R${i + 1} on Rollout { id rollbackOf { ...R${i} } ...R${i} }`).join('\n');
    const query = `{ a: rollout(id: "${rolloutId}") { ...R6 } b: rollout(id: "${rolloutId}") { ...R6 } }
      fragment R0 on Rollout { id kind state toVersion fromVersion message createdAt updatedAt }\n${chain}`;
    expect(expandedFieldCount(parse(query), MAX_COMPILED_FIELDS)).toBeGreaterThan(MAX_COMPILED_FIELDS);
    const before = await executions();
    const answers = await everyRun(query);
    const after = await executions();
    expect(answers[0]!.status).toBe(200);
    expect(after.compiled - before.compiled).toBe(0);
    expect(after.interpreted - before.interpreted).toBe(DEFAULT_COMPILE_AFTER + 1);
  });

  it('says which variable and why, whichever executor runs', async () => {
    const answers = await everyRun('query($f: RolloutFilter) { rollouts(filter: $f) { totalCount } }', { f: { createdAfter: 'yesterday' } });
    for (const answer of answers) {
      const error = (JSON.parse(answer.body) as { errors: { message: string; extensions: { code: string } }[] }).errors[0]!;
      expect(error.extensions.code).toBe('BAD_USER_INPUT');
      expect(error.message).toContain('$f');
      expect(error.message).toContain('ISO 8601');
    }
  });

  it('never compiles a document with more than the field limit, however often it runs', async () => {
    // (Aliases are limited to a few dozen, so the fields repeat one name; graphql-js merges them, the count does not.)
    const fields = Array.from({ length: MAX_COMPILED_FIELDS + 1 }, () => '__typename').join(' ');
    const before = await executions();
    for (let run = 0; run < DEFAULT_COMPILE_AFTER + 3; run += 1) {
      const answer = await gql(app.url, `{ ${fields} }`);
      expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
      expect(answer.data?.__typename).toBe('Query');
    }
    const after = await executions();
    expect(after.compiled).toBe(before.compiled);
    expect(after.interpreted - before.interpreted).toBe(DEFAULT_COMPILE_AFTER + 3);
  });
});

describe('ROLLPLANE_GRAPHQL_COMPILE_AFTER', () => {
  it('off: every query runs in graphql-js, however often it is sent', async () => {
    const app = await startTestApp({ env: { ROLLPLANE_GRAPHQL_COMPILE_AFTER: 'off', ROLLPLANE_RESPONSE_CACHE_MB: '0' } });
    try {
      for (let run = 0; run < 5; run += 1) expect((await gql(app.url, '{ rollouts(first: 5) { totalCount } }')).data).toEqual({ rollouts: { totalCount: 0 } });
      const samples = await scrape(`${app.baseUrl}/metrics`);
      const runs = (executor: string) => samples.find((s) => s.name === 'rollplane_graphql_executions_total' && s.labels.executor === executor)?.value ?? 0;
      expect(runs('interpreted')).toBe(5);
      expect(runs('compiled')).toBe(0);
    } finally {
      await app.close();
    }
  });
});
