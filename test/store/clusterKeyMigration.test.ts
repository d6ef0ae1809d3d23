import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../src/store/migrate.js';
import { applyPgMigrations } from '../../src/store/postgres/migrate.js';
import { migrationsCopy } from '../helpers/migrations.js';
import { describeWithPostgres } from '../helpers/postgres.js';

/**
 * Migration 20261208100000_cluster_key (ADR 0054): every record gets its member cluster. Rows written before it are
 * `local` (targets, revisions, in-flight work, events about an object) or NULL (a rollout's own events, audit
 * entries), and none is lost: on SQLite the columns are added in place, never by Prisma's table rebuild, which inside
 * the migration's transaction would cascade from a dropped parent to its children (ADR 0046).
 */
const MIGRATION = '20261208100000_cluster_key';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rollplane cluster key migration '));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The rows as the previous release wrote them, in statements both databases take ($n and ? alike by position). */
const SEED = [
  `INSERT INTO "Rollout" ("id", "kind", "state", "toVersion", "updatedAt") VALUES ('ro_1', 'AGENT_POOL', 'PROGRESSING', 'agent:v2', CURRENT_TIMESTAMP)`,
  `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "namespace", "name", "ordinal", "state", "toVersion", "updatedAt") VALUES ('ro_1.0', 'ro_1', 'AGENT_POOL', 'ns', 'p0', 0, 'SUCCEEDED', 'agent:v2', CURRENT_TIMESTAMP)`,
  `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "namespace", "name", "ordinal", "state", "toVersion", "updatedAt") VALUES ('ro_1.1', 'ro_1', 'AGENT_POOL', 'ns', 'p1', 1, 'PROGRESSING', 'agent:v2', CURRENT_TIMESTAMP)`,
  `INSERT INTO "Revision" ("kind", "namespace", "name", "n", "version", "rolloutId") VALUES ('AGENT_POOL', 'ns', 'p0', 1, 'agent:v2', 'ro_1')`,
  `INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "payload") VALUES ('TargetStateChanged', 'ro_1', 'AGENT_POOL', 'ns', 'p0', '{"from":"PROGRESSING","to":"SUCCEEDED"}')`,
  `INSERT INTO "Event" ("type", "rolloutId", "kind", "payload") VALUES ('RolloutStateChanged', 'ro_1', 'AGENT_POOL', '{"from":"PENDING","to":"PROGRESSING"}')`,
  `INSERT INTO "InFlightChange" ("kind", "namespace", "name", "payload") VALUES ('AGENT_POOL', 'ns', 'p1', '{"step":"deleted"}')`,
  `INSERT INTO "AuditEntry" ("operation", "result") VALUES ('bumpAgentPools', 'OK')`,
];

/** What every table holds after the migration, and that the new keys take a second cluster's rows. */
const CHECKS: { sql: string; rows: unknown[] }[] = [
  {
    sql: 'SELECT "id", "cluster" FROM "RolloutTarget" ORDER BY "id"',
    rows: [
      { id: 'ro_1.0', cluster: 'local' },
      { id: 'ro_1.1', cluster: 'local' },
    ],
  },
  { sql: 'SELECT "name", "n", "rolloutId", "cluster" FROM "Revision"', rows: [{ name: 'p0', n: 1, rolloutId: 'ro_1', cluster: 'local' }] },
  {
    sql: 'SELECT "type", "payload", "cluster" FROM "Event" ORDER BY "id"',
    rows: [
      { type: 'TargetStateChanged', payload: '{"from":"PROGRESSING","to":"SUCCEEDED"}', cluster: 'local' },
      { type: 'RolloutStateChanged', payload: '{"from":"PENDING","to":"PROGRESSING"}', cluster: null },
    ],
  },
  { sql: 'SELECT "name", "payload", "cluster" FROM "InFlightChange"', rows: [{ name: 'p1', payload: '{"step":"deleted"}', cluster: 'local' }] },
  { sql: 'SELECT "operation", "cluster" FROM "AuditEntry"', rows: [{ operation: 'bumpAgentPools', cluster: null }] },
];

/** The same target, revision number and in-flight key in another cluster: allowed now, refused twice in one. */
const SECOND_CLUSTER = [
  `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "namespace", "name", "ordinal", "state", "toVersion", "updatedAt", "cluster") VALUES ('ro_1.2', 'ro_1', 'AGENT_POOL', 'ns', 'p0', 2, 'PENDING', 'agent:v2', CURRENT_TIMESTAMP, 'edge-1')`,
  `INSERT INTO "Revision" ("kind", "namespace", "name", "n", "version", "cluster") VALUES ('AGENT_POOL', 'ns', 'p0', 1, 'agent:v1', 'edge-1')`,
  `INSERT INTO "InFlightChange" ("kind", "namespace", "name", "cluster") VALUES ('AGENT_POOL', 'ns', 'p1', 'edge-1')`,
];
const DUPLICATE = `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "namespace", "name", "ordinal", "state", "toVersion", "updatedAt", "cluster") VALUES ('ro_1.3', 'ro_1', 'AGENT_POOL', 'ns', 'p0', 3, 'PENDING', 'agent:v2', CURRENT_TIMESTAMP, 'edge-1')`;

describe(`${MIGRATION} on SQLite`, () => {
  it('gives every row its cluster and loses no child row', () => {
    const db = new Sqlite(path.join(tmp, 'cluster-key.db'));
    try {
      db.pragma('foreign_keys = ON');
      applyMigrations(db, migrationsCopy(tmp, 'sqlite', MIGRATION, 'before'));
      for (const statement of SEED) db.prepare(statement).run();

      expect(applyMigrations(db, migrationsCopy(tmp, 'sqlite', MIGRATION, 'this')).applied).toEqual([MIGRATION]);
      for (const { sql, rows } of CHECKS) expect(db.prepare(sql).all()).toEqual(rows);
      for (const statement of SECOND_CLUSTER) db.prepare(statement).run();
      expect(() => db.prepare(DUPLICATE).run()).toThrow(/UNIQUE/);
      expect(db.pragma('foreign_key_check')).toEqual([]);
      // The foreign keys still act: a rollout deleted takes its targets along and leaves its revisions unowned.
      db.prepare(`DELETE FROM "Rollout" WHERE "id" = 'ro_1'`).run();
      expect(db.prepare('SELECT count(*) AS n FROM "RolloutTarget"').get()).toEqual({ n: 0 });
      expect(db.prepare('SELECT "rolloutId" FROM "Revision"').pluck().all()).toEqual([null, null]);
    } finally {
      db.close();
    }
  });
});

describeWithPostgres(`${MIGRATION} on PostgreSQL`, (server) => {
  it('gives every row its cluster and loses no child row', async () => {
    const client = new pg.Client({ connectionString: await server().createDatabase() });
    await client.connect();
    try {
      await applyPgMigrations(client, migrationsCopy(tmp, 'postgresql', MIGRATION, 'before'));
      for (const statement of SEED) await client.query(statement);

      expect((await applyPgMigrations(client, migrationsCopy(tmp, 'postgresql', MIGRATION, 'this'))).applied).toEqual([MIGRATION]);
      for (const { sql, rows } of CHECKS) expect((await client.query(sql)).rows).toEqual(rows);
      for (const statement of SECOND_CLUSTER) await client.query(statement);
      await expect(client.query(DUPLICATE)).rejects.toThrow(/unique/);
    } finally {
      await client.end();
    }
  });
});
