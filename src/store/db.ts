import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaClient } from './generated/client.js';
import { applyMigrations, type MigrationReport } from './migrate.js';
import { Sql } from './Sql.js';
import { UnavailableError } from '../errors.js';

export type { PrismaClient };

export interface Database {
  prisma: PrismaClient;
  /** rollplane's own connection for the history's hot path (see Sql.ts). */
  sql: Sql;
  /** Absolute path of the SQLite file. */
  file: string;
  migrations: MigrationReport;
  /** True once migrations ran; false after close. Used by /readyz. */
  isOpen(): boolean;
  close(): Promise<void>;
}

/** SQLite's wait for a lock held by another connection (the Prisma adapter's or a second process) before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5_000;

/** `file:./data/rollplane.db` → absolute path; relative paths are relative to the working directory. */
export function sqlitePathFromUrl(url: string): string {
  if (!url.startsWith('file:')) {
    throw new UnavailableError(`DATABASE_URL must be a SQLite file: URL (got "${url}")`);
  }
  const raw = url.slice('file:'.length).split('?')[0]!;
  return path.resolve(raw);
}

/**
 * Opens the history store: creates the directory, sets WAL mode and the busy timeout, applies committed migrations,
 * then opens Prisma through the better-sqlite3 driver adapter and rollplane's own connection on the same file.
 */
export async function openDatabase(url: string): Promise<Database> {
  const file = sqlitePathFromUrl(url);
  mkdirSync(path.dirname(file), { recursive: true });
  let migrations: MigrationReport;
  const admin = new Sqlite(file, { timeout: BUSY_TIMEOUT_MS });
  try {
    // WAL is persistent in the file: set once here, every later connection inherits it.
    admin.pragma('journal_mode = WAL');
    admin.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    migrations = applyMigrations(admin);
  } catch (error) {
    throw new UnavailableError(`cannot open database ${file}: ${(error as Error).message}`, { cause: error });
  } finally {
    admin.close();
  }
  const adapter = new PrismaBetterSQLite3({ url: `file:${file}`, timeout: BUSY_TIMEOUT_MS });
  const prisma = new PrismaClient({ adapter });
  await prisma.$connect();
  // The adapter opens its own connection; make sure it waits on locks too.
  await prisma.$queryRawUnsafe(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  // In WAL mode NORMAL syncs at checkpoints instead of every commit: a killed process loses nothing committed (the WAL
  // is in the OS cache), only an OS crash or power loss can drop the last commits. See docs/adr/0008-sqlite-durability.md.
  await prisma.$queryRawUnsafe('PRAGMA synchronous = NORMAL');
  const sql = Sql.open(file);
  let open = true;
  return {
    prisma,
    sql,
    file,
    migrations,
    isOpen: () => open,
    async close() {
      if (!open) return;
      open = false;
      sql.close();
      await prisma.$disconnect();
    },
  };
}
