import type pg from 'pg';
import type { MigrationReport } from '../migrate.js';
import { applyPgMigrations } from './migrate.js';
import { PgHistoryStore } from './PgHistoryStore.js';
import { historyPool, type PoolTimeouts, watchLentConnection } from './pool.js';
import { redactDatabaseUrl } from '../../util/databaseUrl.js';
import { UnavailableError } from '../../errors.js';

/** Opens the PostgreSQL history: a pool, then the committed migrations (one replica applies them, the others wait). */
export async function openPgHistoryStore(
  url: string,
  options: { poolSize?: number; timeouts?: PoolTimeouts } = {},
): Promise<{ store: PgHistoryStore; migrations: MigrationReport; pool: pg.Pool }> {
  const pool = historyPool(url, options.poolSize, options.timeouts);
  try {
    const migrations = await migrate(url);
    return { store: new PgHistoryStore(pool), migrations, pool };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new UnavailableError(`cannot open database ${redactDatabaseUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
}

/** On a connection of its own, without the history pool's timeouts (see historyPool), closed once they are applied. */
async function migrate(url: string): Promise<MigrationReport> {
  const pool = historyPool(url, 1, false);
  try {
    const client = await pool.connect();
    const giveBack = watchLentConnection(client);
    try {
      return await applyPgMigrations(client);
    } finally {
      client.release(giveBack());
    }
  } finally {
    await pool.end().catch(() => undefined);
  }
}
