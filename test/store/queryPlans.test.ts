import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type EventFilter, withFilterCluster } from '../../src/domain/events.js';
import { openSqliteDatabase as openDatabase, type SqliteDatabase as Database } from '../../src/store/db.js';
import { insertEvents } from '../../src/store/events.js';
import {
  EVENT_ID_INDEXES,
  eventIndexName,
  readEventsAfter,
  readEventsBefore,
  servedByIndex,
  type EventQuery,
  type EventRead,
} from '../../src/store/eventReads.js';
import {
  rolloutCountStatement,
  rolloutListStatement,
  targetPageStatement,
  targetStateCountsStatement,
  type RolloutQueryFilter,
} from '../../src/store/rolloutQueries.js';
import { eventOf } from '../helpers/events.js';

/**
 * Every filter of RolloutFilter and EventFilter is answered through an index, so that history queries stay as fast
 * with a million events as with ten thousand. EXPLAIN QUERY PLAN on the statements the API runs; a full scan of the
 * table (`SCAN r` / `SCAN Event` with no index) fails. `search` is a substring match and cannot use an index: it is
 * the one exception, and bounded by the other filters and the page size.
 */
describe('query plans of the API reads', () => {
  let dir: string;
  let db: Database;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-plans-'));
    db = await openDatabase(`file:${path.join(dir, 'plans.db')}`);
    const at = new Date().toISOString();
    for (let i = 0; i < 50; i++) {
      db.sql.run(
        `INSERT INTO "Rollout" ("id", "kind", "state", "toVersion", "createdAt", "updatedAt") VALUES (?, 'AGENT_POOL', 'SUCCEEDED', 'v2', ?, ?)`,
        `ro_${i}`,
        at,
        at,
      );
      db.sql.run(
        `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "namespace", "name", "ordinal", "state", "toVersion", "updatedAt") VALUES (?, ?, 'AGENT_POOL', 'default', ?, 0, 'SUCCEEDED', 'v2', ?)`,
        `t_${i}`,
        `ro_${i}`,
        `pool-${i}`,
        at,
      );
    }
    insertEvents(
      db.sql,
      Array.from({ length: 500 }, (_, i) =>
        eventOf(EventType.AgentRecreated, { rolloutId: `ro_${i % 50}`, kind: 'AGENT_POOL', namespace: 'default', name: `pool-${i % 50}` }),
      ),
    );
  });
  afterAll(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const planOf = (statement: { text: string; params: unknown[] }) =>
    (db.sql.db.prepare(`EXPLAIN QUERY PLAN ${statement.text}`).all(...(statement.params as never[])) as { detail: string }[]).map((r) => r.detail);
  const fullScans = (plan: string[]) => plan.filter((line) => /^SCAN (r|Event)$/.test(line.trim()));

  const rolloutFilters: [string, RolloutQueryFilter][] = [
    ['no filter', {}],
    ['kind', { kind: 'AGENT_POOL' }],
    ['states', { states: ['PENDING', 'PROGRESSING'] }],
    ['targetName', { targetName: 'pool-7' }],
    ['createdAfter', { createdAfter: new Date(Date.now() - 3600_000) }],
    ['createdBefore', { createdBefore: new Date() }],
    ['kind and states', { kind: 'NODE_AGENT', states: ['FAILED'] }],
    // Rollouts walked newest first by their index, each one's targets probed by its (rolloutId, cluster, …) key.
    ['clusters', { clusters: ['edge-1'] }],
    ['version', { version: 'v2' }],
    // Rollouts walked newest first, each one's waves probed by its (rolloutId, ordinal) key.
    ['wave', { wave: 'prod' }],
  ];

  it.each(rolloutFilters)('lists rollouts by %s through an index', (_name, filter) => {
    const plan = planOf(rolloutListStatement(filter, undefined, 21));
    expect(fullScans(plan), plan.join('\n')).toEqual([]);
    const next = planOf(rolloutListStatement(filter, { createdAt: new Date(), id: 'ro_9' }, 21));
    expect(fullScans(next), next.join('\n')).toEqual([]);
  });

  it.each(rolloutFilters.filter(([name]) => name !== 'no filter'))('counts rollouts by %s through an index', (_name, filter) => {
    const plan = planOf(rolloutCountStatement(filter));
    expect(fullScans(plan), plan.join('\n')).toEqual([]);
  });

  it('counts the targets of a page of rollouts per state through the (rolloutId, state, ordinal) index', () => {
    const plan = planOf(targetStateCountsStatement(['ro_1', 'ro_2', 'ro_3']));
    expect(plan.join('\n')).toMatch(/USING (COVERING )?INDEX RolloutTarget_rolloutId_state_ordinal_idx/);
    expect(
      plan.filter((line) => /^SCAN /.test(line.trim())),
      plan.join('\n'),
    ).toEqual([]);
  });

  // A rollout may have thousands of targets: a page of them walks an index in ordinal order and stops at the page's end,
  // never sorting every target of the rollout (or every one in the state).
  it.each([
    ['all targets', undefined, 'RolloutTarget_rolloutId_ordinal_idx'],
    ['targets in one state', 'FAILED', 'RolloutTarget_rolloutId_state_ordinal_idx'],
  ] as const)('pages %s of a rollout in admission order through an index, without sorting', (_name, state, index) => {
    for (const after of [undefined, 7]) {
      const plan = planOf(targetPageStatement('ro_1', state, after, 51));
      expect(plan.join('\n')).toContain(`USING INDEX ${index}`);
      expect(plan.join('\n')).not.toContain('TEMP B-TREE');
    }
  });

  /** Every statement a read runs, each id look-up answered with 250 (the store holds 500 events). */
  const statementsOf = (read: EventRead): EventQuery[] => {
    const statements: EventQuery[] = [];
    let step = read.next();
    while (!step.done) {
      statements.push(step.value);
      step = read.next(step.value.returns === 'id' ? 250 : []);
    }
    return statements;
  };
  const sqlitePlanOf = (query: EventQuery) =>
    planOf({ text: query.text, params: query.params.map((p) => (p instanceof Date ? p.toISOString().replace('Z', '+00:00') : p)) });

  /** Every combination of EventFilter's fields: none, one or two types, and each other field present or not. */
  const allEventFilters: EventFilter[] = [];
  for (const types of [undefined, [EventType.AgentRecreated], [EventType.AgentRecreated, EventType.TargetFailed]]) {
    for (let mask = 0; mask < 32; mask++) {
      allEventFilters.push({
        ...(types ? { types } : {}),
        ...(mask & 1 ? { rolloutId: 'ro_3' } : {}),
        ...(mask & 2 ? { kind: 'AGENT_POOL' as const } : {}),
        ...(mask & 4 ? { namespace: 'default' } : {}),
        ...(mask & 8 ? { name: 'pool-7' } : {}),
        ...(mask & 16 ? { since: new Date(Date.now() - 60_000) } : {}),
      });
    }
    // A member's object: the cluster named.
    for (const mask of [8, 10, 12, 14]) {
      allEventFilters.push({
        ...(types ? { types } : {}),
        cluster: 'edge-1',
        ...(mask & 2 ? { kind: 'AGENT_POOL' as const } : {}),
        ...(mask & 4 ? { namespace: 'default' } : {}),
        name: 'pool-7',
      });
    }
  }
  const nameOf = (filter: EventFilter) => JSON.stringify({ ...filter, ...(filter.since ? { since: 'recent' } : {}) });

  /** The columns an index search compares for equality, from `SEARCH Event USING INDEX i (a=? AND b=? AND id>?)`. */
  const equalitiesOf = (line: string) => [...(/\((.*)\)$/.exec(line)?.[1] ?? '').matchAll(/(\w+)=\?/g)].map((m) => m[1]!).sort();

  // No read of the Event table looks at an unbounded number of rows (docs/adr/0032): a filter that an index serves
  // exactly searches that index on every one of its columns (each row it meets is one it returns, up to the LIMIT);
  // any other searches the primary key between two ids (a window of EVENT_SCAN_WINDOW at most), whatever other index
  // its columns would suggest. `since` is a search of the createdAt index for the starting id.
  it.each(allEventFilters.map((filter) => [nameOf(filter), filter] as const))('reads events by %s through an index or a window of ids', (_name, filter) => {
    const reads = [
      readEventsAfter(filter, undefined, 51, 'sqlite'),
      readEventsAfter(filter, 100, 51, 'sqlite'),
      readEventsBefore(filter, undefined, 51, 'sqlite'),
      readEventsBefore(filter, 100, 51, 'sqlite'),
    ];
    const typeBranches = (filter.types?.length ?? 0) > 0 ? filter.types!.length : 1;
    // A filter that names an object reads its cluster (`local` when it names none, ADR 0060): one more equality.
    const scoped = withFilterCluster(filter);
    const columns = [
      ...(['rolloutId', 'kind', 'namespace', 'name', 'cluster'] as const).filter((c) => scoped[c] !== undefined),
      ...((filter.types?.length ?? 0) > 0 ? ['type'] : []),
    ].sort();
    for (const read of reads) {
      for (const query of statementsOf(read)) {
        const plan = sqlitePlanOf(query);
        const text = plan.join('\n');
        if (query.returns === 'id') {
          // The window's end (the largest id: SQLite reads it from the end of the primary key, shown as `SEARCH
          // Event`) or the since look-up (the createdAt index, twice).
          const lines = plan.map((line) => line.trim()).filter((line) => !/^SCALAR SUBQUERY \d+$/.test(line));
          expect(
            lines.every((line) => /^SEARCH Event( USING COVERING INDEX Event_createdAt_idx \(createdAt[=>]\?\))?$/.test(line)),
            text,
          ).toBe(true);
          continue;
        }
        const searches = plan.filter((line) => /^(SEARCH|SCAN) Event/.test(line.trim()));
        if (servedByIndex(filter) && columns.length > 0) {
          // One search per type, on exactly the filter's columns; several types merged from limited branches only.
          expect(searches, text).toHaveLength(typeBranches);
          for (const search of searches) expect(equalitiesOf(search), text).toEqual(columns);
          expect(fullScans(plan), text).toEqual([]);
          if (typeBranches === 1) expect(text).not.toContain('TEMP B-TREE');
        } else if (servedByIndex(filter)) {
          // No condition: the table itself in id order (newest first from its end, cut by the LIMIT).
          expect(searches, text).toHaveLength(1);
          expect(searches[0]!.trim(), text).toMatch(/^(SEARCH Event USING INTEGER PRIMARY KEY \(rowid[<>]=?\?( AND rowid<\?)?\)|SCAN Event)$/);
          expect(text).not.toContain('TEMP B-TREE');
        } else {
          expect(
            searches.map((l) => l.trim()),
            text,
          ).toEqual(['SEARCH Event USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)']);
          expect(fullScans(plan), text).toEqual([]);
          expect(text).not.toContain('TEMP B-TREE');
        }
      }
    }
  });

  it('knows the indexes of Event that serve a filter in id order (EVENT_ID_INDEXES), as the database has them', () => {
    const indexes = (db.sql.db.prepare(`PRAGMA index_list("Event")`).all() as { name: string }[]).map(({ name }) =>
      (db.sql.db.prepare(`PRAGMA index_info("${name}")`).all() as { seqno: number; name: string }[]).sort((a, b) => a.seqno - b.seqno).map((c) => c.name),
    );
    const byId = indexes.filter((columns) => columns[columns.length - 1] === 'id').map((columns) => columns.slice(0, -1).join(','));
    expect(byId.sort()).toEqual(EVENT_ID_INDEXES.map((columns) => columns.join(',')).sort());
    // By the names the SQLite statements give in INDEXED BY.
    for (const columns of EVENT_ID_INDEXES) {
      const named = db.sql.db.prepare(`PRAGMA index_info("${eventIndexName(columns)}")`).all() as { name: string }[];
      expect(named.map((c) => c.name)).toEqual([...columns, 'id']);
    }
  });

  // Reads the product makes on every query of a page must not walk windows of ids: with 100,000 events of other kinds
  // the agent pools' history view (AgentPoolChoices: "has any agent-pool rollout or target changed state since?", on
  // every agentPools and drift query) read ten windows, 20 ms a query, until (kind, type, id) served it.
  it.each([
    ['the newest state change of a kind', { kind: 'AGENT_POOL', types: [EventType.RolloutStateChanged, EventType.TargetStateChanged] }],
    ['a rollout --wait feed', { rolloutId: 'ro_3', types: [EventType.RolloutStateChanged] }],
    ["a target's latest event of one type", { kind: 'NODE_AGENT', namespace: 'default', name: 'n-1', types: [EventType.TargetStateChanged] }],
  ] as [string, EventFilter][])('serves %s through an index', (_name, filter) => {
    expect(servedByIndex(filter)).toBe(true);
  });

  it('would catch a filter that scans the table', () => {
    const plan = planOf({ text: 'SELECT * FROM "Event" WHERE "payload" = ? ORDER BY "id" LIMIT 5', params: ['{}'] });
    // Ordered by the primary key, this is a SCAN of the table's b-tree: the check must see it.
    expect(plan.join('\n')).toMatch(/SCAN Event/);
  });
});
