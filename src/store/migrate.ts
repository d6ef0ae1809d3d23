import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { AppError, ErrorCode } from '../errors.js';
import { projectPath, projectRoot } from '../util/projectRoot.js';

/**
 * Applies the committed Prisma migrations (`prisma/sqlite/migrations/<name>/migration.sql`) at start-up, recording them in
 * `_prisma_migrations` exactly as `prisma migrate deploy` does (same table, checksum = sha256 of the file), so the
 * Prisma CLI and rollplane agree on what is applied. Doing it in-process avoids shipping and spawning the Prisma CLI
 * at run time (see docs/adr/0002-migrations-at-start-up.md).
 */
export interface MigrationReport {
  applied: string[];
  total: number;
}

export type Provider = 'sqlite' | 'postgresql';

/** The committed migrations of one provider: `prisma/<provider>/migrations` at the project root. */
export function migrationsDirFor(provider: Provider, candidate?: string): string {
  if (candidate) return candidate;
  const dir = projectPath('prisma', provider, 'migrations');
  if (!existsSync(dir)) throw new AppError(ErrorCode.Internal, `prisma/${provider}/migrations not found in ${projectRoot()}`);
  return dir;
}

/** Migration folder names in the order they apply (Prisma's: by name, i.e. by timestamp). */
export function migrationNames(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/** Prisma's checksum of a migration file. */
export function checksumOf(sql: string): string {
  return createHash('sha256').update(sql).digest('hex');
}

/**
 * The migrations of `dir` still to apply, in order, given those already applied (name → checksum); one applied and
 * edited since is refused (changedAfterApplied), as Prisma's migrate does.
 */
export function pendingMigrations(dir: string, names: readonly string[], done: ReadonlyMap<string, string>): { name: string; sql: string; checksum: string }[] {
  const pending: { name: string; sql: string; checksum: string }[] = [];
  for (const name of names) {
    const sql = readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
    const checksum = checksumOf(sql);
    const recorded = done.get(name);
    if (recorded === undefined) pending.push({ name, sql, checksum });
    else if (recorded !== checksum) throw changedAfterApplied(name);
  }
  return pending;
}

export function changedAfterApplied(name: string): AppError {
  return new AppError(ErrorCode.Internal, `migration ${name} was changed after it was applied (checksum differs); committed migrations must never be edited`);
}

/** Prisma's own table of applied migrations, in Prisma's SQLite DDL (so the CLI and rollplane share it). */
export const SQLITE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" TEXT PRIMARY KEY NOT NULL,
    "checksum" TEXT NOT NULL,
    "finished_at" DATETIME,
    "migration_name" TEXT NOT NULL,
    "logs" TEXT,
    "rolled_back_at" DATETIME,
    "started_at" DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0
  )`;

export function applyMigrations(db: BetterSqlite3.Database, migrationsDir?: string): MigrationReport {
  const dir = migrationsDirFor('sqlite', migrationsDir);
  db.exec(SQLITE_MIGRATIONS_TABLE);
  const names = migrationNames(dir);
  const done = new Map<string, string>();
  for (const row of db.prepare('SELECT migration_name, checksum FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL').all() as {
    migration_name: string;
    checksum: string;
  }[]) {
    done.set(row.migration_name, row.checksum);
  }
  const applied: string[] = [];
  for (const { name, sql, checksum } of pendingMigrations(dir, names, done)) {
    const startedAt = new Date().toISOString();
    db.transaction(() => {
      db.exec(sql);
      db.prepare('INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES (?, ?, ?, ?, ?, 1)').run(
        randomUUID(),
        checksum,
        new Date().toISOString(),
        name,
        startedAt,
      );
    })();
    applied.push(name);
  }
  return { applied, total: names.length };
}
