import Sqlite from 'better-sqlite3';
import { parse } from 'graphql';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLLOUT_QUERY } from '../../src/cli/operations.js';
import { cachedRootFieldsOf, ResponseCache } from '../../src/graphql/responseCache.js';
import { ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';
import { AnnouncedWriteGeneration, type WriteGeneration } from '../../src/store/writeGeneration.js';
import { AGENT_POOLS } from '../../src/kinds/agentPool/ui/queries.js';
import { EVENTS, ROLLOUT_DETAIL, ROLLOUTS } from '../../src/ui/client/queries.js';
import { seedRollout, startTestApp, type TestApp } from '../helpers/app.js';
import { startRig, type Rig } from '../e2e/agentPool/rig.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { scrape } from '../helpers/promText.js';
import { until } from '../helpers/until.js';

/**
 * The response cache (ADR 0026) may serve an answer again only while the history is exactly as it was when the answer
 * was read. Each test first shows a hit (so that a cache that never serves cannot pass), then writes through one path
 * and requires the next answer to show the write.
 */

async function post(url: string, query: string | { toString(): string }, variables?: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: String(query), variables }),
  });
  return { status: res.status, body: await res.text() };
}

async function cachedCount(baseUrl: string): Promise<number> {
  const samples = await scrape(`${baseUrl}/metrics`);
  return samples.find((s) => s.name === 'rollplane_graphql_executions_total' && s.labels.executor === 'cached')?.value ?? 0;
}

describe('the response cache on SQLite', () => {
  let app: TestApp;
  let rolloutId: string;

  beforeAll(async () => {
    app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=2,nodes=1,clusters=1' } });
    rolloutId = await seedRollout(app, { actor: 'ci' });
  });
  afterAll(async () => {
    await app?.close();
  });

  /** Sends `query` twice, the second answer from the cache (the first may be too); returns the (identical) body. */
  async function untilCached(query: string | { toString(): string }, variables?: Record<string, unknown>) {
    const before = await cachedCount(app.baseUrl);
    const answers = [await post(app.url, query, variables), await post(app.url, query, variables)];
    expect(await cachedCount(app.baseUrl)).toBeGreaterThanOrEqual(before + 1);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[0]!.status).toBe(200);
    return answers[0]!.body;
  }

  it('serves a repeated history query from the cache, byte for byte as it ran', async () => {
    for (const [query, variables] of [
      [ROLLOUTS, { first: 20 }],
      [ROLLOUT_DETAIL, { id: rolloutId }],
      [EVENTS, { first: 50 }],
      [ROLLOUT_QUERY, { id: rolloutId }],
    ] as const) {
      await untilCached(query, variables);
    }
    // Same document, other variables: another question, another answer.
    const one = JSON.parse((await post(app.url, ROLLOUTS, { first: 1 })).body);
    expect(one.data.rollouts.edges).toHaveLength(1);
  });

  it('answers concurrent identical questions alike, reading them once or a few times, never once each', async () => {
    await seedRollout(app, { actor: 'concurrent' }); // a write: whatever was kept is no longer valid
    const executions = async () => {
      const samples = await scrape(`${app.baseUrl}/metrics`);
      const of = (executor: string) => samples.find((s) => s.name === 'rollplane_graphql_executions_total' && s.labels.executor === executor)?.value ?? 0;
      return { ran: of('interpreted'), cached: of('cached') };
    };
    const before = await executions();
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(app.url, ROLLOUTS, { first: 20 })));
    const after = await executions();
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(after.ran - before.ran + (after.cached - before.cached)).toBe(20);
    expect(after.cached - before.cached).toBeGreaterThan(0);
  });

  it('answers afresh after a mutation over HTTP', async () => {
    const before = JSON.parse(await untilCached(ROLLOUT_QUERY, { id: rolloutId }));
    expect(before.data.rollout.state).toBe('PENDING');
    const paused = await post(app.url, 'mutation($id: ID!) { pauseRollout(id: $id, reason: "cache test") { state } }', { id: rolloutId });
    expect(JSON.parse(paused.body).data.pauseRollout.state).toBe('PAUSED');
    const after = JSON.parse((await post(app.url, ROLLOUT_QUERY, { id: rolloutId })).body);
    expect(after.data.rollout.state).toBe('PAUSED');
    await post(app.url, 'mutation($id: ID!) { resumeRollout(id: $id) { state } }', { id: rolloutId });
  });

  it('answers afresh after a write by the server itself, with no request involved', async () => {
    const before = JSON.parse(await untilCached(ROLLOUTS, { first: 50 }));
    const id = await seedRollout(app, { actor: 'engine-like' });
    const after = JSON.parse((await post(app.url, ROLLOUTS, { first: 50 })).body);
    expect(after.data.rollouts.totalCount).toBe(before.data.rollouts.totalCount + 1);
    expect(after.data.rollouts.edges.map((e: { node: { id: string } }) => e.node.id)).toContain(id);
  });

  it('answers afresh after another process wrote the file (data_version)', async () => {
    const before = JSON.parse(await untilCached(ROLLOUT_QUERY, { id: rolloutId }));
    const other = new Sqlite(app.databaseFile, { timeout: 5_000 });
    try {
      other.prepare('UPDATE "Rollout" SET "message" = ? WHERE "id" = ?').run('written by another process', rolloutId);
    } finally {
      other.close();
    }
    const after = JSON.parse((await post(app.url, ROLLOUT_QUERY, { id: rolloutId })).body);
    expect(before.data.rollout.message).not.toBe('written by another process');
    expect(after.data.rollout.message).toBe('written by another process');
  });

  it('never keeps answers read from anything else, answers with errors, or bare __typename', async () => {
    const before = await cachedCount(app.baseUrl);
    for (let i = 0; i < 3; i += 1) {
      await post(app.url, '{ serverInfo { version lastEventId } }');
      await post(app.url, '{ rollouts(first: 1) { totalCount } workQueues { name } }');
      await post(app.url, '{ __typename }');
      const refused = await post(app.url, 'query($id: ID!) { rollout(id: $id) { id } }', { id: '' });
      expect(JSON.parse(refused.body).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
    expect(await cachedCount(app.baseUrl)).toBe(before);
  });

  it('keeps the ETag of a GET the same when the answer comes from the cache', async () => {
    const url = `${app.url}?query=${encodeURIComponent('{ rollouts(first: 5) { totalCount edges { node { id state } } } }')}`;
    const tags = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
      expect(res.status).toBe(200);
      tags.push(res.headers.get('etag'));
    }
    expect(tags[0]).toBeTruthy();
    expect(new Set(tags).size).toBe(1);
  });
});

describe('the response cache on cluster views', () => {
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=1' });
    await until('both pools in the informers', async () => JSON.parse((await post(rig.url, AGENT_POOLS, { first: 10 })).body).data.agentPools.totalCount === 2);
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('serves agentPools and drift again, and afresh as soon as an informer sees a change', async () => {
    const baseUrl = new URL('/', rig.url).toString().replace(/\/$/, '');
    // A label no controller acts on: the change reaches the informers and nothing else (no history write, no pod).
    const labelled = async () =>
      JSON.parse((await post(rig.url, AGENT_POOLS, { first: 10, filter: { labelSelector: 'cache-test=yes' } })).body).data.agentPools.totalCount;
    const before = await cachedCount(baseUrl);
    expect(await labelled()).toBe(0);
    expect(await labelled()).toBe(0);
    const driftQuery = '{ drift(first: 10) { totalCount } }';
    await post(rig.url, driftQuery);
    await post(rig.url, driftQuery);
    expect(await cachedCount(baseUrl)).toBeGreaterThanOrEqual(before + 2);
    const pool = rig.pool('net-1')!;
    const type = rig.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    rig.sim.store.update(type, { ...pool, metadata: { ...pool.metadata, labels: { ...pool.metadata.labels, 'cache-test': 'yes' } } });
    await until('agentPools to count the labelled pool', async () => (await labelled()) === 1, 10_000);
  });
});

describe('the response cache off', () => {
  it('runs every query when ROLLPLANE_RESPONSE_CACHE_MB is 0', async () => {
    const app = await startTestApp({ env: { ROLLPLANE_RESPONSE_CACHE_MB: '0' } });
    try {
      for (let i = 0; i < 3; i += 1) await post(app.url, ROLLOUTS, { first: 20 });
      expect(await cachedCount(app.baseUrl)).toBe(0);
    } finally {
      await app.close();
    }
  });
});

describe('ResponseCache', () => {
  const fixed = (value: string | null): WriteGeneration & { value: string | null } => ({
    value,
    current() {
      return this.value;
    },
    bump() {},
    async stop() {},
  });
  const both = (generation: WriteGeneration) => ({ history: generation, cluster: generation });
  /** The shared root fields and the registered kinds', as the server keeps them. */
  const ROOT_FIELDS = cachedRootFieldsOf(ROLLOUT_KIND_MODULES);

  it('keys answers on the document, the operation, the role and the variables', () => {
    const cache = new ResponseCache(both(fixed('1')), 1 << 20, ROOT_FIELDS);
    const keys = new Set([
      cache.keyOf('h', undefined, 'viewer', { id: '1' }),
      cache.keyOf('h', undefined, 'admin', { id: '1' }),
      cache.keyOf('h', 'Op', 'viewer', { id: '1' }),
      cache.keyOf('h', undefined, 'viewer', { id: '2' }),
      cache.keyOf('g', undefined, 'viewer', { id: '1' }),
      // An operation name cannot run into the role.
      cache.keyOf('h', 'Op","viewer', 'x', {}),
      cache.keyOf('h', 'Op', 'viewer","x', {}),
    ]);
    expect(keys.size).toBe(7);
    expect(cache.keyOf('h', undefined, 'viewer', { long: 'x'.repeat(5_000) })).toBeUndefined();
  });

  it('keeps only queries whose every root field reads the history, or it and the informers, and nothing else', () => {
    const cache = new ResponseCache(both(fixed('1')), 1 << 20, ROOT_FIELDS);
    const source = (text: string) => {
      const document = parse(text);
      return cache.sourceOf(document, document.definitions.find((d) => d.kind === 'OperationDefinition')!);
    };
    expect(source('{ rollouts { totalCount } events { pageInfo { hasNextPage } } }')).toBe('history');
    expect(source('query { ...F } fragment F on Query { rollout(id: "1") { id } }')).toBe('history');
    expect(source('{ rollouts { totalCount } clusterUpgradeDurations { seconds } }')).toBe('history');
    expect(source('{ rollouts { totalCount } agentPools { totalCount } }')).toBe('cluster');
    expect(source('query { ...F } fragment F on Query { drift { totalCount } }')).toBe('cluster');
    expect(source('{ agentPools { totalCount } workQueues { name } }')).toBeUndefined();
    expect(source('{ virtualClusters { totalCount } }')).toBeUndefined();
    expect(source('{ serverInfo { version } }')).toBeUndefined();
    expect(source('{ __typename }')).toBeUndefined();
    expect(source('mutation { pauseRollout(id: "1") { id } }')).toBeUndefined();
  });

  it('serves an answer only in the generation it was read in, and nothing while the generation is unknown', () => {
    const generation = fixed('1');
    const cache = new ResponseCache(both(generation), 1 << 20, ROOT_FIELDS);
    cache.keep('k', '1', { a: 1 });
    expect(cache.lookup('k', cache.generationNow('history')!)).toEqual({ data: { a: 1 } });
    expect(cache.lookup('k', '2')).toBeUndefined();
    // Gone, not only hidden: the old generation does not come back.
    expect(cache.lookup('k', '1')).toBeUndefined();
    expect(cache.size()).toEqual({ entries: 0, bytes: 0 });
    // Unknown (PostgreSQL's LISTEN connection down or silent): the executor then neither looks up nor keeps.
    generation.value = null;
    expect(cache.generationNow('history')).toBeNull();
  });

  it('stays within its budget, dropping the least recently used answers first', () => {
    // Each entry is estimated at 2 × (116-byte answer + 2-byte key) + 256 ≈ 492 bytes: ten fit in 5,000.
    const cache = new ResponseCache(both(fixed('1')), 5_000, ROOT_FIELDS);
    const data = (i: number) => ({ i, pad: 'x'.repeat(100) });
    for (let i = 0; i < 5; i += 1) cache.keep(`k${i}`, '1', data(i));
    expect(cache.size().bytes).toBeGreaterThan(5 * 2 * 118);
    expect(cache.lookup('k0', '1')).toBeDefined(); // k0 is now the most recently used
    for (let i = 5; i < 12; i += 1) cache.keep(`k${i}`, '1', data(i));
    expect(cache.size().bytes).toBeLessThanOrEqual(5_000);
    expect(cache.size().entries).toBe(10);
    expect(cache.lookup('k0', '1')).toBeDefined();
    expect(cache.lookup('k1', '1')).toBeUndefined();
    expect(cache.lookup('k2', '1')).toBeUndefined();
    expect(cache.lookup('k3', '1')).toBeDefined();
    // An answer over an eighth of the budget is not kept at all.
    cache.keep('big', '1', { pad: 'x'.repeat(400) });
    expect(cache.lookup('big', '1')).toBeUndefined();
  });

  it('lets identical questions wait for the one read in progress in the same generation', async () => {
    const cache = new ResponseCache(both(fixed('1')), 1 << 20, ROOT_FIELDS);
    expect(cache.readInProgress('k', '1')).toBeUndefined();
    const finish = cache.startRead('k', '1');
    const waiting = cache.readInProgress('k', '1');
    expect(waiting).toBeDefined();
    // Another generation (a write came in between) must read for itself.
    expect(cache.readInProgress('k', '2')).toBeUndefined();
    const answer = cache.keep('k', '1', { a: 1 });
    finish(answer);
    expect(await waiting).toBe(answer);
    expect(cache.readInProgress('k', '1')).toBeUndefined();
    // A read that ends without an answer to share (an error) lets each waiting request read for itself.
    const failed = cache.startRead('k', '1');
    const alsoWaiting = cache.readInProgress('k', '1');
    failed(undefined);
    expect(await alsoWaiting).toBeUndefined();
  });

  it('gives the body JSON.stringify would give, from the answer it kept', () => {
    const cache = new ResponseCache(both(fixed('1')), 1 << 20, ROOT_FIELDS);
    const data = { rollouts: { totalCount: 2, edges: [{ node: { id: 'é"\u2028' } }] } };
    cache.keep('k', '1', data);
    const answer = cache.lookup('k', '1')!;
    const result = { errors: undefined, data: answer.data, extensions: undefined };
    expect(cache.serialized(result)).toBe(JSON.stringify(result));
    expect(cache.serialized({ data: { other: 1 } })).toBeUndefined();
    expect(cache.serialized({ data: answer.data, errors: [] })).toBeUndefined();
  });
});

describe('AnnouncedWriteGeneration', () => {
  it('is unknown while its LISTEN connection has not proved for a while that it delivers', () => {
    let now = 10_000;
    let deliveredBefore = now;
    const generation = new AnnouncedWriteGeneration(
      () => deliveredBefore,
      () => now,
    );
    generation.resume();
    expect(generation.current()).not.toBeNull();
    now += AnnouncedWriteGeneration.MAX_SILENCE_MS + 1;
    expect(generation.current()).toBeNull();
    deliveredBefore = now;
    expect(generation.current()).not.toBeNull();
  });

  it('is unknown until it listens, moves on every bump, and is unknown again while announcements cannot arrive', () => {
    const generation = new AnnouncedWriteGeneration();
    expect(generation.current()).toBeNull();
    generation.resume();
    const first = generation.current();
    generation.bump();
    expect(generation.current()).not.toBe(first);
    const second = generation.current();
    generation.suspend();
    expect(generation.current()).toBeNull();
    generation.resume();
    expect([first, second]).not.toContain(generation.current());
  });
});

/**
 * Asks until an answer comes from the cache: a replica may hear of a commit it has already read (the announcement
 * arrives after the first answer was kept), which ends that answer once more.
 */
async function untilKept(app: TestApp, ask: () => Promise<unknown>): Promise<void> {
  const before = await cachedCount(app.baseUrl);
  await until(
    'an answer from the cache',
    async () => {
      await ask();
      return (await cachedCount(app.baseUrl)) > before;
    },
    15_000,
  );
}

describeWithPostgres('the response cache across PostgreSQL replicas', (server) => {
  let reader: TestApp;
  let writer: TestApp;
  let url: string;

  /** A write behind the API's back, as another tool or an operator would make it. */
  const rawUpdate = async (text: string, params: unknown[]) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(text, params);
    } finally {
      await client.end();
    }
  };

  /** The backends of the reader's LISTEN connections (found as the ones that were not there before it started). */
  let readerListeners: number[] = [];
  const listenerPids = async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name IN ('rollplane_writes-listener', 'rollplane-events-listener')",
      );
      return rows.map((r) => r.pid);
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    url = await server().createDatabase();
    writer = await startTestApp({ env: { DATABASE_URL: url } });
    const writers = await listenerPids();
    reader = await startTestApp({ env: { DATABASE_URL: url } });
    readerListeners = (await listenerPids()).filter((pid) => !writers.includes(pid));
  }, 120_000);
  afterAll(async () => {
    await reader?.close();
    await writer?.close();
  });

  it("serves one replica's answer again until another replica's commit is announced", async () => {
    const id = await seedRollout(writer, { actor: 'ci' });
    const state = async () => JSON.parse((await post(reader.url, ROLLOUT_QUERY, { id })).body).data.rollout?.state;
    // The seed's announcement may still be on its way: wait for the reader to see the rollout, then for a hit.
    await until('the reader to see the rollout', async () => (await state()) === 'PENDING', 10_000);
    await untilKept(reader, async () => expect(await state()).toBe('PENDING'));
    // A write on the other replica, not through the reader: only the announcement can tell the reader.
    const paused = await post(writer.url, 'mutation($id: ID!) { pauseRollout(id: $id) { state } }', { id });
    expect(JSON.parse(paused.body).data.pauseRollout.state).toBe('PAUSED');
    // Within a second; without the announcement the old answer would be served for ever.
    await until('the reader to answer PAUSED', async () => (await state()) === 'PAUSED', 1_000);
  });

  it('answers afresh after a write that comes with no event (the tables announce every write)', async () => {
    const id = await seedRollout(writer, { actor: 'ci' });
    const message = async () => JSON.parse((await post(reader.url, ROLLOUT_QUERY, { id })).body).data.rollout?.message;
    await until('the reader to see the rollout', async () => (await message()) !== undefined, 10_000);
    await untilKept(reader, message);
    await rawUpdate('UPDATE "Rollout" SET "message" = $1 WHERE "id" = $2', ['changed behind the API', id]);
    await until('the reader to answer the new message', async () => (await message()) === 'changed behind the API', 1_000);
  });

  it('stops serving kept answers when its LISTEN connections stay open but deliver nothing, and recovers', async () => {
    expect(readerListeners).toHaveLength(2);
    const id = await seedRollout(writer, { actor: 'ci' });
    const message = async () => JSON.parse((await post(reader.url, ROLLOUT_QUERY, { id })).body).data.rollout?.message;
    await until('the reader to see the rollout', async () => (await message()) !== undefined, 10_000);
    // A half-open connection, as behind a NAT that dropped it: the socket stays open, nothing arrives.
    for (const pid of readerListeners) process.kill(pid, 'SIGSTOP');
    try {
      // A write with no event (nothing reaches the reader's feed either): only the reader's own doubt can end the
      // kept answer. Without the heartbeats it would be served for as long as the stall lasts.
      await rawUpdate('UPDATE "Rollout" SET "message" = $1 WHERE "id" = $2', ['written during the stall', id]);
      await until('the reader to answer the new message', async () => (await message()) === 'written during the stall', 10_000);
      // It listens again on new connections (the stalled ones count as lost), and keeps answers again.
      await untilKept(reader, message);
    } finally {
      for (const pid of readerListeners) process.kill(pid, 'SIGCONT');
    }
  });

  it('answers afresh on the writing replica at once (its own commit moves its generation)', async () => {
    const id = await seedRollout(writer, { actor: 'ci' });
    const state = async () => JSON.parse((await post(writer.url, ROLLOUT_QUERY, { id })).body).data.rollout.state;
    expect(await state()).toBe('PENDING');
    expect(await state()).toBe('PENDING');
    await writer.domain.rollouts.pause(id, 'engine-like write, no request');
    expect(await state()).toBe('PAUSED');
  });
});
