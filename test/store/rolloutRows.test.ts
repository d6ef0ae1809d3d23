import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../src/domain/events.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { insertEvents, listEventsAfter, listEventsBefore, toStoredEvent } from '../../src/store/events.js';
import { listRollouts, targetPage } from '../../src/store/rolloutQueries.js';
import { findRollout, rolloutOf, targetOf, targetsOf, type Raw, type RolloutRow, type TargetRow } from '../../src/store/rolloutRows.js';
import { dateOf, sqlDate } from '../../src/store/Sql.js';
import { untypedEvent } from '../helpers/events.js';

/**
 * The API's reads take rows in raw mode with named columns (rolloutColumns, TARGET_COLUMNS, the Event columns) and
 * build the row objects by position. A column listed out of order, or one a migration adds and the list misses, would
 * read wrong or not at all: each read here must equal the table's own `SELECT *` row, with every column set.
 */
describe('raw-mode row reads', () => {
  let dir: string;
  let db: SqliteDatabase;
  const at = (s: number) => sqlDate(new Date(Date.UTC(2026, 11, 1, 8, 0, s, 123)));
  const columnsOf = (table: string) => (db.sql.db.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((c) => c.name).sort();

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-rows-'));
    db = await openSqliteDatabase(`file:${path.join(dir, 'rows.db')}`);
    db.sql.run(
      `INSERT INTO "Rollout" ("id", "kind", "state", "fromVersion", "toVersion", "selector", "strategy", "causeActor", "causeRunUrl", "causeCommit",
         "causeMessage", "idempotencyKey", "rollbackOfId", "message", "engineState", "createdAt", "updatedAt", "startedAt", "finishedAt")
       VALUES ('ro_1', 'AGENT_POOL', 'FAILED', 'v1', 'v2', '{"a":1}', '{"maxUnavailable":"25%"}', 'ci', 'https://ci/1', 'c1', 'release', 'key-1',
         'ro_0', 'a message', '{"finished":true}', ?, ?, ?, ?)`,
      at(1),
      at(2),
      at(3),
      at(4),
    );
    db.sql.run(
      `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "namespace", "name", "ordinal", "state", "fromVersion", "toVersion", "attempts",
         "skipReason", "error", "admittedAt", "finishedAt", "updatedAt")
       VALUES ('t_1', 'ro_1', 'AGENT_POOL', 'default', 'pool-1', 3, 'FAILED', 'v1', 'v2', 2, 'a reason', 'an error', ?, ?, ?)`,
      at(5),
      at(6),
      at(7),
    );
    insertEvents(db.sql, [
      untypedEvent({ type: EventType.TargetFailed, rolloutId: 'ro_1', kind: 'AGENT_POOL', namespace: 'default', name: 'pool-1', payload: { n: 1 } }),
    ]);
  });
  afterAll(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a rollout with every column as the table holds it', () => {
    const expected = rolloutOf(db.sql.get<Raw<RolloutRow>>('SELECT * FROM "Rollout" WHERE "id" = ?', 'ro_1')!);
    expect(findRollout(db.sql, 'ro_1')).toStrictEqual(expected);
    expect(listRollouts(db.sql, {}, undefined, 5)).toStrictEqual([expected]);
    expect(Object.keys(expected).sort()).toEqual(columnsOf('Rollout'));
  });

  it('reads a target with every column as the table holds it', () => {
    const expected = targetOf(db.sql.get<Raw<TargetRow>>('SELECT * FROM "RolloutTarget" WHERE "id" = ?', 't_1')!);
    expect(targetPage(db.sql, 'ro_1', undefined, undefined, 5)).toStrictEqual([expected]);
    expect(targetPage(db.sql, 'ro_1', 'FAILED', undefined, 5)).toStrictEqual([expected]);
    expect(targetsOf(db.sql, 'ro_1')).toStrictEqual([expected]);
    expect(Object.keys(expected).sort()).toEqual(columnsOf('RolloutTarget'));
  });

  it('reads an event with every column as the table holds it', () => {
    const raw = db.sql.get<Parameters<typeof toStoredEvent>[0] & { createdAt: string }>('SELECT * FROM "Event"')!;
    const expected = toStoredEvent({ ...raw, createdAt: dateOf(raw.createdAt) });
    expect(listEventsAfter(db.sql, {}, undefined, 5).events).toStrictEqual([expected]);
    expect(listEventsAfter(db.sql, { types: [EventType.TargetFailed, EventType.AgentRecreated] }, undefined, 5).events).toStrictEqual([expected]);
    expect(listEventsBefore(db.sql, { rolloutId: 'ro_1' }, undefined, 5).events).toStrictEqual([expected]);
    expect(Object.keys(expected).sort()).toEqual(columnsOf('Event'));
  });
});
