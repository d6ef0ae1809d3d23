import type pg from 'pg';
import type { MigrationReport } from '../migrate.js';
import { applyPgMigrations } from './migrate.js';
import { PgHistoryStore } from './PgHistoryStore.js';
import { historyPool, watchLentConnection } from './pool.js';
import { redactDatabaseUrl } from '../../util/databaseUrl.js';
import { UnavailableError } from '../../errors.js';

/** Opens the PostgreSQL history: a pool, then the committed migrations (one replica applies them, the others wait). */
export async function openPgHistoryStore(
  url: string,
  options: { poolSize?: number } = {},
): Promise<{ store: PgHistoryStore; migrations: MigrationReport; pool: pg.Pool }> {
  const pool = historyPool(url, options.poolSize);
  try {
    const client = await pool.connect();
    const giveBack = watchLentConnection(client);
    try {
      const migrations = await applyPgMigrations(client);
      return { store: new PgHistoryStore(pool), migrations, pool };
    } finally {
      client.release(giveBack());
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new UnavailableError(`cannot open database ${redactDatabaseUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
}
