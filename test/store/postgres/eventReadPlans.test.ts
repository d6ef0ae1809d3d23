import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EventType, type EventFilter } from '../../../src/domain/events.js';
import { EVENT_SCAN_WINDOW } from '../../../src/domain/historyPort.js';
import { readEventsAfter, readEventsBefore, servedByIndex, type EventRead } from '../../../src/store/eventReads.js';
import { openPgHistoryStore } from '../../../src/store/postgres/open.js';
import { isoOf, numbered } from '../../../src/store/postgres/pool.js';
import { describeWithPostgres } from '../../helpers/postgres.js';

/**
 * The PostgreSQL side of test/store/queryPlans.test.ts's event reads: PostgreSQL takes no index hints, so its plans are
 * checked with its own statistics over a history of 200,000 events, and measured: EXPLAIN ANALYZE counts the rows each
 * statement of a read looked at (returned, or removed by a filter). A filter that an index serves exactly looks at
 * the rows it returns (one more per type, where a branch stops); any other at one window of ids.
 */
const HISTORY = 200_000;
const LIMIT = 51;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describeWithPostgres('event reads on PostgreSQL', (server) => {
  let client: pg.Client;
  let recent: Date;
  beforeAll(async () => {
    const url = await server().createDatabase();
    const { store } = await openPgHistoryStore(url, { poolSize: 1 });
    await store.close();
    client = new pg.Client({ connectionString: url });
    await client.connect();
    const types = Object.values(EventType);
    await client.query(
      `INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "payload", "createdAt")
       SELECT ($1::text[])[1 + i % $2], 'ro_' || (i / 50), (ARRAY['AGENT_POOL','NODE_AGENT','VIRTUAL_CLUSTER'])[1 + i % 3],
              'ns-' || (i % 20), 't-' || (i % 1000), '{}', TIMESTAMP '2026-01-01' + i * INTERVAL '1 second'
         FROM generate_series(0, $3 - 1) AS i`,
      [types, types.length, HISTORY],
    );
    await client.query('ANALYZE "Event"');
    recent = new Date(Date.UTC(2026, 0, 1) + (HISTORY - 5_000) * 1000);
  }, 120_000);
  afterAll(async () => {
    await client?.end();
  });

  /** Runs a read, each statement under EXPLAIN ANALYZE, then for real (its answer feeds the next statement). */
  const explainRead = async (read: EventRead) => {
    const plans: { text: string; returns: string; nodes: PlanNode[] }[] = [];
    let step = read.next();
    while (!step.done) {
      const query = step.value;
      const text = numbered(query.text);
      const params = query.params.map((p) => (p instanceof Date ? isoOf(p) : p));
      const [{ 'QUERY PLAN': explained }] = (await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params)).rows as {
        'QUERY PLAN': { Plan: PlanNode }[];
      }[];
      plans.push({ text, returns: query.returns, nodes: nodesOf(explained![0]!.Plan) });
      const { rows } = await client.query(text, params);
      step = read.next(query.returns === 'id' ? (rows[0]?.id ?? null) : rows.map((r) => ({ id: r.id })));
    }
    return { plans, page: step.value };
  };

  const filters: EventFilter[] = [];
  for (const types of [undefined, [EventType.AgentRecreated], [EventType.AgentRecreated, EventType.TargetFailed]]) {
    for (let mask = 0; mask < 32; mask++) {
      filters.push({
        ...(types ? { types } : {}),
        ...(mask & 1 ? { rolloutId: 'ro_3' } : {}),
        ...(mask & 2 ? { kind: 'AGENT_POOL' as const } : {}),
        ...(mask & 4 ? { namespace: 'ns-7' } : {}),
        ...(mask & 8 ? { name: 't-7' } : {}),
        ...(mask & 16 ? { since: new Date(0) } : {}),
      });
    }
  }

  /** How many events match the filter on the given side of a position: what a read may return at most. */
  const matchesBeyond = async (filter: EventFilter, direction: 'after' | 'before', position: number | undefined) => {
    const conditions: string[] = [];
    const params: unknown[] = [];
    const add = (condition: string, value: unknown) => {
      params.push(value);
      conditions.push(condition.replace('?', `$${params.length}`));
    };
    if (filter.types?.length) add('"type" = ANY(?::text[])', filter.types);
    for (const column of ['rolloutId', 'kind', 'namespace', 'name'] as const) if (filter[column] !== undefined) add(`"${column}" = ?`, filter[column]);
    if (filter.since) add('"createdAt" >= ?', isoOf(filter.since));
    if (position !== undefined) add(direction === 'after' ? '"id" > ?' : '"id" < ?', position);
    const { rows } = await client.query(`SELECT COUNT(*)::int AS n FROM "Event" ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}`, params);
    return rows[0].n as number;
  };

  it.each(filters.map((filter) => [JSON.stringify(filter), filter] as const))('reads %s looking at a bounded number of rows', async (_name, given) => {
    // `since` once near the end of the history (a short stretch), once before its start (all of it).
    for (const filter of given.since ? [{ ...given, since: recent }, given] : [given]) {
      const branches = Math.max(1, filter.types?.length ?? 0);
      const columns: string[] = [
        ...(['rolloutId', 'kind', 'namespace', 'name'] as const).filter((c) => filter[c] !== undefined),
        ...((filter.types?.length ?? 0) > 0 ? ['type'] : []),
      ];
      const reads: [EventRead, 'after' | 'before', number | undefined][] = [
        [readEventsAfter(filter, undefined, LIMIT, 'postgresql'), 'after', undefined],
        [readEventsAfter(filter, HISTORY / 2, LIMIT, 'postgresql'), 'after', HISTORY / 2],
        [readEventsBefore(filter, undefined, LIMIT, 'postgresql'), 'before', undefined],
        [readEventsBefore(filter, HISTORY / 2, LIMIT, 'postgresql'), 'before', HISTORY / 2],
      ];
      for (const [read, direction, position] of reads) {
        const { plans } = await explainRead(read);
        for (const { text, returns, nodes } of plans) {
          const detail = `${text}\n${JSON.stringify(nodes.map((n) => [n['Node Type'], n['Index Name'], n['Index Cond'], n['Actual Rows'], n['Rows Removed by Filter']]))}`;
          const scans = nodes.filter((n) => /Scan$/.test(n['Node Type']) && n['Node Type'] !== 'Bitmap Index Scan' && n['Node Type'] !== 'Subquery Scan');
          const looked = scans.reduce(
            (sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * n['Actual Loops'],
            0,
          );
          const indexScans = nodes.filter((n) => n['Index Name'] !== undefined);
          expect(
            nodes.some((n) => n['Node Type'] === 'Seq Scan'),
            detail,
          ).toBe(false);
          if (returns === 'id') {
            // The largest id, or the since look-up: one entry of an index each (plus the events stamped alike).
            expect(looked, detail).toBeLessThanOrEqual(2);
            continue;
          }
          if (servedByIndex(filter) && columns.length > 0) {
            // Every row looked at is a match: the index compares every column of the filter (so the entries it
            // passes over match too), nothing is filtered out after. A page's worth per type, or, where the planner
            // expects few matches, every match beyond the position (read in one go and sorted).
            for (const scan of indexScans) for (const column of columns) expect(scan['Index Cond'], detail).toMatch(new RegExp(`\\b${column}\\b`));
            expect(
              scans.every((n) => (n['Rows Removed by Filter'] ?? 0) === 0 && (n['Rows Removed by Index Recheck'] ?? 0) === 0),
              detail,
            ).toBe(true);
            expect(looked, detail).toBeLessThanOrEqual(Math.max(branches * (LIMIT + 1), await matchesBeyond(filter, direction, position)));
          } else if (servedByIndex(filter)) {
            expect(looked, detail).toBeLessThanOrEqual(LIMIT + 1);
          } else {
            expect(looked, detail).toBeLessThanOrEqual(EVENT_SCAN_WINDOW + 1);
            for (const scan of indexScans) expect(scan['Index Name'], detail).toBe('Event_pkey');
          }
        }
      }
    }
  });

  // Last: it changes the history. A kind and a type that were frequent and then stopped: reading past where they
  // stopped used to walk the primary key to the end, filtering (PostgreSQL expects a match every few rows).
  it('reads a frequent value that stopped occurring through its index, not by walking the rest of the table', async () => {
    await client.query(
      `INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "payload", "createdAt")
       SELECT 'TargetStateChanged', 'ro_late', 'NODE_AGENT', 'ns-late', 'node-' || (i % 100), '{}', TIMESTAMP '2026-06-01' + i * INTERVAL '1 second'
         FROM generate_series(0, 99999) AS i`,
    );
    await client.query('ANALYZE "Event"');
    const lookedAt = (nodes: PlanNode[]) =>
      nodes
        .filter((n) => /Scan$/.test(n['Node Type']) && n['Node Type'] !== 'Bitmap Index Scan')
        .reduce((sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'], 0);
    for (const filter of [
      { kind: 'AGENT_POOL' as const },
      { types: [EventType.AgentRecreated] },
      { types: [EventType.AgentRecreated, EventType.TargetFailed] },
    ]) {
      const { plans, page } = await explainRead(readEventsAfter(filter, HISTORY, LIMIT, 'postgresql'));
      expect(page.events).toEqual([]);
      for (const { text, nodes } of plans) expect(lookedAt(nodes), `${text}\n${JSON.stringify(nodes)}`).toBeLessThanOrEqual(2);
    }
    // The plain form, for contrast: the planner walks the primary key from the position and filters every row after it.
    const [{ 'QUERY PLAN': plain }] = (
      await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) SELECT "id" FROM "Event" WHERE "kind" = $1 AND "id" > $2 ORDER BY "id" LIMIT 51`, [
        'AGENT_POOL',
        HISTORY,
      ])
    ).rows as { 'QUERY PLAN': { Plan: PlanNode }[] }[];
    expect(lookedAt(nodesOf(plain![0]!.Plan))).toBeGreaterThan(EVENT_SCAN_WINDOW);
  });
});
