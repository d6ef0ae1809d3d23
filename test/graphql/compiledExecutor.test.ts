import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLLOUT_QUERY } from '../../src/cli/operations.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { DEFAULT_COMPILE_AFTER, MAX_COMPILED_FIELDS } from '../../src/graphql/compiledExecutor.js';
import { AGENT_POOLS, DRIFT, EVENTS, ROLLOUT_DETAIL, ROLLOUT_TARGETS, ROLLOUTS } from '../../src/ui/client/queries.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql, type GraphQLResponse } from '../helpers/graphql.js';
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
    app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=3,nodes=2,clusters=1' } });
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
    const out: Record<string, number> = { compiled: 0, interpreted: 0 };
    for (const s of samples) if (s.name === 'rollplane_graphql_executions_total') out[s.labels.executor!] = s.value;
    return out;
  }

  let casesRun = 0;
  /** Sends one request until it has run compiled; returns every answer. The comment makes each case's text, and so
   * Apollo's parsed document (which is what counts runs), its own. */
  async function everyRun(query: string, variables?: Record<string, unknown>): Promise<GraphQLResponse[]> {
    casesRun += 1;
    query = `${query}\n# case ${casesRun}`;
    const answers: GraphQLResponse[] = [];
    for (let run = 0; run <= DEFAULT_COMPILE_AFTER; run += 1) answers.push(await gql(app.url, query, variables));
    return answers;
  }

  const cases: [string, () => [string, Record<string, unknown>?], ('compiled' | 'interpreted')?][] = [
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
      'aliases, fragments, @skip/@include and __typename',
      () => [
        `query($yes: Boolean!, $no: Boolean!) { a: rollouts(first: 1) { ...R } b: rollouts(first: 2) { totalCount @include(if: $yes) edges @skip(if: $no) { cursor node { __typename id } } } }
       fragment R on RolloutConnection { __typename pageInfo { hasNextPage } }`,
        { yes: true, no: false },
      ],
    ],
    ['NOT_FOUND from a mutation (mutations are never compiled)', () => ['mutation { pauseRollout(id: "ro_missing") { id } }'], 'interpreted'],
    ['BAD_USER_INPUT naming the field (page size)', () => ['{ rollouts(first: 5000) { totalCount } }']],
    ['BAD_USER_INPUT naming the field (cursor)', () => ['{ rollouts(after: "not-a-cursor") { totalCount } }']],
    [
      'a bad DateTime variable, with the scalar\u2019s reason',
      () => ['query($f: RolloutFilter) { rollouts(filter: $f) { totalCount } }', { f: { createdAfter: 'yesterday' } }],
    ],
    ['a missing required variable', () => ['query($id: ID!) { rollout(id: $id) { id } }', {}]],
    ['a variable of the wrong type', () => ['query($n: Int) { rollouts(first: $n) { totalCount } }', { n: 'ten' }]],
  ];

  for (const [name, request, lastRun = 'compiled'] of cases) {
    it(name, async () => {
      const [query, variables] = request();
      const before = await executions();
      const answers = await everyRun(query, variables);
      const after = await executions();
      // The first runs were interpreted and the last one compiled, so the comparison below compares the two executors.
      const compiled = lastRun === 'compiled' ? 1 : 0;
      expect(after.interpreted - before.interpreted).toBe(DEFAULT_COMPILE_AFTER + 1 - compiled);
      expect(after.compiled - before.compiled).toBe(compiled);
      for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
    });
  }

  it('says which variable and why, whichever executor runs', async () => {
    const answers = await everyRun('query($f: RolloutFilter) { rollouts(filter: $f) { totalCount } }', { f: { createdAfter: 'yesterday' } });
    for (const answer of answers) {
      expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(answer.errors?.[0]?.message).toContain('$f');
      expect(answer.errors?.[0]?.message).toContain('ISO 8601');
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
    const app = await startTestApp({ env: { ROLLPLANE_GRAPHQL_COMPILE_AFTER: 'off' } });
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
