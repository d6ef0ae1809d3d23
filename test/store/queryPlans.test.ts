import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type EventFilter } from '../../src/domain/events.js';
import { openSqliteDatabase as openDatabase, type SqliteDatabase as Database } from '../../src/store/db.js';
import { eventListBeforeStatement, eventListStatement, insertEvents } from '../../src/store/events.js';
import {
  rolloutCountStatement,
  rolloutListStatement,
  targetPageStatement,
  targetStateCountsStatement,
  type RolloutQueryFilter,
} from '../../src/store/rolloutQueries.js';

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
      Array.from({ length: 500 }, (_, i) => ({
        type: EventType.AgentRecreated,
        rolloutId: `ro_${i % 50}`,
        kind: 'AGENT_POOL' as const,
        namespace: 'default',
        name: `pool-${i % 50}`,
      })),
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

  const eventFilters: [string, EventFilter][] = [
    ['no filter', {}],
    ['types', { types: [EventType.AgentRecreated, EventType.TargetFailed] }],
    ['rolloutId', { rolloutId: 'ro_3' }],
    ['kind', { kind: 'AGENT_POOL' }],
    ['namespace and name', { namespace: 'default', name: 'pool-7' }],
    ['kind, namespace and name', { kind: 'AGENT_POOL', namespace: 'default', name: 'pool-7' }],
    ['since', { since: new Date(Date.now() - 60_000) }],
  ];

  it.each(eventFilters)('lists events by %s through an index, in id order without sorting', (_name, filter) => {
    for (const after of [undefined, 250]) {
      const plan = planOf(eventListStatement(filter, after, 51));
      expect(fullScans(plan), plan.join('\n')).toEqual([]);
      // The Event table is the one that grows without bound: a page must never sort every match. Several types are
      // merged from one limited branch each, so their sort holds at most (types × page) rows.
      if ((filter.types?.length ?? 0) > 1) expect(plan.filter((l) => l.includes('USING INDEX Event_type_id_idx'))).toHaveLength(filter.types!.length);
      else expect(plan.join('\n')).not.toContain('TEMP B-TREE');
    }
  });

  // Newest first (a pool's history, the node agents' external-change look-up): one type at most, as the callers ask.
  it.each(eventFilters.filter(([, filter]) => (filter.types?.length ?? 0) <= 1 && filter.since === undefined))(
    'lists events newest first by %s through an index, without sorting',
    (_name, filter) => {
      // With no condition at all the newest page is the table's own b-tree walked back from its end and cut by the
      // LIMIT ("SCAN Event", like the check below would catch): only the page before a cursor is checked then.
      const noCondition = Object.keys(filter).length === 0;
      for (const before of noCondition ? [250] : [undefined, 250]) {
        const plan = planOf(eventListBeforeStatement(filter, before, 51));
        expect(fullScans(plan), plan.join('\n')).toEqual([]);
        expect(plan.join('\n')).not.toContain('TEMP B-TREE');
      }
    },
  );

  it('would catch a filter that scans the table', () => {
    const plan = planOf({ text: 'SELECT * FROM "Event" WHERE "payload" = ? ORDER BY "id" LIMIT 5', params: ['{}'] });
    // Ordered by the primary key, this is a SCAN of the table's b-tree: the check must see it.
    expect(plan.join('\n')).toMatch(/SCAN Event/);
  });
});
