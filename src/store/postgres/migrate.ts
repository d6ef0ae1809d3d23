import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { migrationNames, migrationsDirFor, pendingMigrations, type MigrationReport } from '../migrate.js';

/**
 * PostgreSQL's counterpart of ../migrate.ts: applies `prisma/postgresql/migrations` at start-up and records them in
 * `_prisma_migrations` with Prisma's own PostgreSQL DDL, so `prisma migrate status/deploy` agree with it.
 *
 * Several replicas may start at once: the runner holds Prisma Migrate's own advisory lock (72707369) for the whole
 * run, so one replica applies and the others wait, then find nothing left. Each file is sent whole as one
 * simple-protocol query inside BEGIN/COMMIT (DDL is transactional on PostgreSQL; `$$` bodies stay intact, unlike
 * adapter-pg's runner, which splits on `;`).
 */
const PRISMA_MIGRATE_LOCK = 72707369;

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

/** `client` must be a dedicated connection (not a pool): the advisory lock belongs to its session. */
export async function applyPgMigrations(client: pg.Client | pg.PoolClient, migrationsDir?: string): Promise<MigrationReport> {
  const dir = migrationsDirFor('postgresql', migrationsDir);
  const names = migrationNames(dir);
  await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK]);
  try {
    await client.query(MIGRATIONS_TABLE);
    const { rows } = await client.query<{ migration_name: string; checksum: string }>(
      'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const done = new Map(rows.map((row) => [row.migration_name, row.checksum]));
    const applied: string[] = [];
    for (const { name, sql, checksum } of pendingMigrations(dir, names, done)) {
      const startedAt = new Date();
      await client.query('BEGIN');
      try {
        await client.query(sql); // no parameters: the simple protocol, several statements in one message
        await client.query(
          'INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES ($1, $2, now(), $3, $4, 1)',
          [randomUUID(), checksum, name, startedAt],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
      applied.push(name);
    }
    return { applied, total: names.length };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]).catch(() => undefined);
  }
}
