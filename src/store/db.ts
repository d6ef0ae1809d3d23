import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { parseDatabaseUrl, redactDatabaseUrl } from '../util/databaseUrl.js';
import { applyMigrations, type MigrationReport } from './migrate.js';
import type { HistoryStore } from './port.js';
import { SqliteHistoryStore } from './sqlite/SqliteHistoryStore.js';
import { SqliteAuditStore } from './sqlite/SqliteAuditStore.js';
import { SqliteTokenStore } from './sqlite/SqliteTokenStore.js';
import type { TokenStore } from '../auth/TokenStore.js';
import type { AuditStore } from '../domain/AuditStore.js';
import type { NotificationStore } from '../domain/notifications/NotificationStore.js';
import { SqliteNotificationStore } from './sqlite/SqliteNotificationStore.js';
import type { MemberClusterStore } from '../domain/clusters/MemberClusterStore.js';
import type { AnalysisStore, AnalysisTemplateStore } from '../analysis/model.js';
import { SqliteAnalysisStore } from './sqlite/SqliteAnalysisStore.js';
import { SqliteMemberClusterStore } from './sqlite/SqliteMemberClusterStore.js';
import { Sql } from './Sql.js';
import { AnnouncedWriteGeneration, HISTORY_WRITES_CHANNEL, SqliteWriteGeneration, type WriteGeneration } from './writeGeneration.js';
import { UnavailableError } from '../errors.js';

export interface Database {
  readonly provider: 'sqlite' | 'postgresql';
  /** The history port (src/store/port.ts): rollouts, targets, revisions, in-flight work, the event log. */
  store: HistoryStore;
  /** API tokens (auth/TokenStore.ts), with revocations announced to every replica. */
  tokens: TokenStore;
  /** The audit log (domain/AuditStore.ts). */
  audit: AuditStore;
  /** Notification subscriptions and the outbox (domain/notifications/NotificationStore.ts). */
  notifications: NotificationStore;
  /** The member cluster registry (domain/clusters/MemberClusterStore.ts). */
  memberClusters: MemberClusterStore;
  /** Analysis runs and every measurement they took (analysis/model.ts, ADR 0061). */
  analysis: AnalysisStore & AnalysisTemplateStore;
  /** Where the data is: the SQLite file, or the PostgreSQL URL with its password masked. */
  location: string;
  migrations: MigrationReport;
  /** True once migrations ran; false after close. Used by /readyz. */
  isOpen(): boolean;
  /**
   * Calls `wake` whenever events may have been committed by another process (PostgreSQL: LISTEN/NOTIFY on a dedicated
   * connection, on every reconnect, and every few seconds as a safety net). SQLite: never; one process writes.
   * `upTo`, when known, is the last event id of the commit that woke it (a hint: what is published up to there needs
   * no read). `onReconnected` (PostgreSQL): that connection listens again after it was lost, i.e. the database is back.
   */
  watchEvents(wake: (upTo?: number) => void, onError?: (error: Error) => void, onReconnected?: () => void): Promise<{ stop(): Promise<void> }>;
  /**
   * The history's write generation (writeGeneration.ts), for the response cache. SQLite: read from the database.
   * PostgreSQL: this replica's commits, and the announcements of every replica's on a dedicated LISTEN connection.
   */
  watchWrites(onError?: (error: Error) => void): Promise<WriteGeneration>;
  /**
   * A rate limit whose buckets every replica shares (PostgreSQL: a row per caller, store/postgres/PgRateLimiter.ts).
   * Absent on SQLite: one process, so the in-process limiter is the whole deployment's.
   */
  sharedRateLimiter?(perMinute: number, burst: number): { take(key: string, amount?: number): Promise<number> };
  close(): Promise<void>;
}

export interface SqliteDatabase extends Database {
  readonly provider: 'sqlite';
  /** rollplane's own connection for the history's hot path (see Sql.ts). */
  sql: Sql;
  /** Absolute path of the SQLite file. */
  file: string;
}

/** How often the write announcements' LISTEN connection proves it still delivers (see AnnouncedWriteGeneration). */
const WRITES_HEARTBEAT_MS = 500;

/** The event id an events notification carries (PgHistoryStore's INSERT_EVENTS sends the commit's last), if any. */
function eventIdOf(payload: string | undefined): number | undefined {
  const id = payload ? Number(payload) : Number.NaN;
  return Number.isSafeInteger(id) ? id : undefined;
}

/** SQLite's wait for a lock held by another connection (a second process, the migrations at start) before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5_000;

/** `file:./data/rollplane.db` → absolute path; relative paths are relative to the working directory. */
export function sqlitePathFromUrl(url: string): string {
  if (!url.startsWith('file:')) {
    throw new UnavailableError(`DATABASE_URL must be a SQLite file: URL (got "${url}")`);
  }
  const raw = url.slice('file:'.length).split('?')[0]!;
  return path.resolve(raw);
}

/** Opens the store DATABASE_URL names: `file:` → SQLite, `postgresql://` → PostgreSQL (see databaseUrl.ts). */
export async function openDatabase(url: string): Promise<Database> {
  const target = parseDatabaseUrl(url);
  return target.provider === 'sqlite' ? openSqliteDatabase(url) : openPostgresDatabase(target.url, target.connectionLimit);
}

/**
 * PostgreSQL: one pool of `connectionLimit` connections for every store (history, tokens, audit, the shared rate
 * limit), opened after the committed migrations are applied (one replica applies them, the others wait).
 */
async function openPostgresDatabase(url: string, connectionLimit: number): Promise<Database> {
  // Loaded only here: a SQLite deployment never loads pg.
  const [
    { openPgHistoryStore },
    { PgEventNotifier },
    { PgRateLimiter },
    { PgTokenStore },
    { PgAuditStore },
    { PgNotificationStore },
    { PgMemberClusterStore },
    { PgAnalysisStore },
  ] = await Promise.all([
    import('./postgres/open.js'),
    import('./postgres/PgEventNotifier.js'),
    import('./postgres/PgRateLimiter.js'),
    import('./postgres/PgTokenStore.js'),
    import('./postgres/PgAuditStore.js'),
    import('./postgres/PgNotificationStore.js'),
    import('./postgres/PgMemberClusterStore.js'),
    import('./postgres/PgAnalysisStore.js'),
  ]);
  const { store, migrations, pool } = await openPgHistoryStore(url, { poolSize: connectionLimit });
  let open = true;
  return {
    provider: 'postgresql',
    store,
    tokens: new PgTokenStore(pool, url),
    audit: new PgAuditStore(pool),
    notifications: new PgNotificationStore(pool),
    memberClusters: new PgMemberClusterStore(pool),
    analysis: new PgAnalysisStore(pool),
    location: redactDatabaseUrl(url),
    migrations,
    isOpen: () => open,
    async watchEvents(wake, onError, onReconnected) {
      const notifier = new PgEventNotifier(url, (payload) => wake(eventIdOf(payload)), onError, onReconnected);
      await notifier.start();
      return notifier;
    },
    async watchWrites(onError) {
      let deliveredBefore = () => 0;
      const generation = new AnnouncedWriteGeneration(() => deliveredBefore());
      const stopBumping = store.onCommit(() => generation.bump());
      let lost = false;
      const notifier = new PgEventNotifier(
        url,
        // Only announcements (their payload is ''): the notifier's periodic wake-up carries none, and announcements
        // are lost only while the connection is down, which suspends the generation until it is back.
        (payload) => payload !== undefined && generation.bump(),
        onError,
        () => generation.resume(),
        HISTORY_WRITES_CHANNEL,
        () => {
          lost = true;
          generation.suspend();
        },
        { heartbeatMs: WRITES_HEARTBEAT_MS },
      );
      deliveredBefore = () => notifier.deliveredBefore();
      generation.listening(async () => {
        stopBumping();
        await notifier.stop();
      });
      await notifier.start();
      if (!lost) generation.resume();
      return generation;
    },
    sharedRateLimiter: (perMinute, burst) => new PgRateLimiter(pool, perMinute, burst),
    async close() {
      if (!open) return;
      open = false;
      await store.close();
    },
  };
}

/**
 * SQLite: creates the directory, sets WAL mode and the busy timeout, applies committed migrations, then opens
 * rollplane's connection on the file (Sql.ts), which every store shares.
 */
export async function openSqliteDatabase(url: string): Promise<SqliteDatabase> {
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
  const sql = Sql.open(file);
  const store = new SqliteHistoryStore(sql);
  let open = true;
  return {
    provider: 'sqlite',
    store,
    tokens: new SqliteTokenStore(sql),
    audit: new SqliteAuditStore(sql),
    notifications: new SqliteNotificationStore(sql),
    memberClusters: new SqliteMemberClusterStore(sql),
    analysis: new SqliteAnalysisStore(sql),
    sql,
    file,
    location: file,
    migrations,
    isOpen: () => open,
    watchEvents: async () => ({ stop: async () => {} }),
    watchWrites: async () => new SqliteWriteGeneration(sql),
    async close() {
      if (!open) return;
      open = false;
      sql.close();
    },
  };
}
