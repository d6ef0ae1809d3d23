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
 * Migration 20261207100000_rollback_to_each_previous_revision (ADR 0046): a rollback stored with the text 'previous
 * revision of each target' for its toVersion gets NULL; every other rollout keeps its toVersion, and nothing else of
 * a rollout (its targets, its revisions) is lost on the way — on SQLite the column is replaced, not the table, whose
 * rebuild would cascade to the targets inside the migration's transaction.
 */
const MIGRATION = '20261207100000_rollback_to_each_previous_revision';
const SENTINEL = 'previous revision of each target';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rollplane sentinel migration '));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The rows as an older rollplane wrote them: a rollback with the sentinel, a rollback to one version, a bump. */
const ROLLOUTS = [
  ['ro_mixed_rollback', 'ro_bump_mixed', SENTINEL],
  ['ro_rollback', 'ro_bump', 'agent:v1'],
  ['ro_bump', null, 'agent:v2'],
] as const;
const INSERT_ROLLOUT = `INSERT INTO "Rollout" ("id", "kind", "state", "toVersion", "rollbackOfId", "updatedAt") VALUES `;
const INSERT_TARGET = `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "name", "ordinal", "state", "toVersion", "updatedAt") VALUES `;
const INSERT_REVISION = `INSERT INTO "Revision" ("kind", "namespace", "name", "n", "version", "rolloutId") VALUES `;

describe(`${MIGRATION} on SQLite`, () => {
  it('turns the sentinel rollback into NULL and keeps every other row', () => {
    const db = new Sqlite(path.join(tmp, 'sentinel.db'));
    try {
      applyMigrations(db, migrationsCopy(tmp, 'sqlite', MIGRATION, 'before'));
      const now = new Date().toISOString();
      for (const [id, rollbackOf, toVersion] of ROLLOUTS) {
        db.prepare(`${INSERT_ROLLOUT}(?, 'AGENT_POOL', 'SUCCEEDED', ?, ?, ?)`).run(id, toVersion, rollbackOf, now);
        db.prepare(`${INSERT_TARGET}(?, ?, 'AGENT_POOL', 'p0', 0, 'SUCCEEDED', 'agent:v1', ?)`).run(`${id}.0`, id, now);
      }
      db.prepare(`${INSERT_REVISION}('AGENT_POOL', '', 'p0', 1, 'agent:v1', 'ro_mixed_rollback')`).run();

      expect(applyMigrations(db, migrationsCopy(tmp, 'sqlite', MIGRATION, 'this')).applied).toEqual([MIGRATION]);
      expect(db.prepare('SELECT "id", "toVersion" FROM "Rollout" ORDER BY "id"').all()).toEqual([
        { id: 'ro_bump', toVersion: 'agent:v2' },
        { id: 'ro_mixed_rollback', toVersion: null },
        { id: 'ro_rollback', toVersion: 'agent:v1' },
      ]);
      expect(db.prepare('SELECT "rolloutId" FROM "RolloutTarget" ORDER BY "rolloutId"').pluck().all()).toEqual(['ro_bump', 'ro_mixed_rollback', 'ro_rollback']);
      expect(db.prepare('SELECT "rolloutId" FROM "Revision"').pluck().all()).toEqual(['ro_mixed_rollback']);
      // The column takes NULL now, and the foreign keys still hold.
      db.prepare(`${INSERT_ROLLOUT}('ro_new', 'AGENT_POOL', 'PENDING', NULL, 'ro_bump', ?)`).run(now);
      expect(db.pragma('foreign_key_check')).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describeWithPostgres(`${MIGRATION} on PostgreSQL`, (server) => {
  it('turns the sentinel rollback into NULL and keeps every other row', async () => {
    const client = new pg.Client({ connectionString: await server().createDatabase() });
    await client.connect();
    try {
      await applyPgMigrations(client, migrationsCopy(tmp, 'postgresql', MIGRATION, 'before'));
      for (const [id, rollbackOf, toVersion] of ROLLOUTS) {
        await client.query(`${INSERT_ROLLOUT}($1, 'AGENT_POOL', 'SUCCEEDED', $2, $3, now())`, [id, toVersion, rollbackOf]);
        await client.query(`${INSERT_TARGET}($1, $2, 'AGENT_POOL', 'p0', 0, 'SUCCEEDED', 'agent:v1', now())`, [`${id}.0`, id]);
      }
      await client.query(`${INSERT_REVISION}('AGENT_POOL', '', 'p0', 1, 'agent:v1', 'ro_mixed_rollback')`);

      expect((await applyPgMigrations(client, migrationsCopy(tmp, 'postgresql', MIGRATION, 'this'))).applied).toEqual([MIGRATION]);
      expect((await client.query('SELECT "id", "toVersion" FROM "Rollout" ORDER BY "id"')).rows).toEqual([
        { id: 'ro_bump', toVersion: 'agent:v2' },
        { id: 'ro_mixed_rollback', toVersion: null },
        { id: 'ro_rollback', toVersion: 'agent:v1' },
      ]);
      expect((await client.query('SELECT "rolloutId" FROM "RolloutTarget" ORDER BY "rolloutId"')).rows.map((r) => r.rolloutId)).toEqual([
        'ro_bump',
        'ro_mixed_rollback',
        'ro_rollback',
      ]);
      await client.query(`${INSERT_ROLLOUT}('ro_new', 'AGENT_POOL', 'PENDING', NULL, 'ro_bump', now())`);
    } finally {
      await client.end();
    }
  });
});
