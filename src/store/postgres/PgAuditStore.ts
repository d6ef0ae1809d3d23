import type pg from 'pg';
import type { AuditRow, AuditStore } from '../../domain/AuditStore.js';
import { isoOf } from './pool.js';

/** The audit log on PostgreSQL, on the history's pg pool. */
export class PgAuditStore implements AuditStore {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  async insert(entry: Parameters<AuditStore['insert']>[0], now: Date): Promise<void> {
    await this.pool.query(
      'INSERT INTO "AuditEntry" ("actor", "role", "operation", "input", "result", "message", "sourceAddr", "cluster", "createdAt") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      [entry.actor, entry.role, entry.operation, entry.input, entry.result, entry.message, entry.sourceAddr, entry.cluster ?? null, isoOf(now)],
    );
  }

  async deleteBefore(cutoff: Date): Promise<number> {
    return (await this.pool.query('DELETE FROM "AuditEntry" WHERE "createdAt" < $1', [isoOf(cutoff)])).rowCount ?? 0;
  }

  async keepNewest(keep: number): Promise<number> {
    return (
      (await this.pool.query('DELETE FROM "AuditEntry" WHERE "id" <= (SELECT "id" FROM "AuditEntry" ORDER BY "id" DESC LIMIT 1 OFFSET $1)', [keep])).rowCount ??
      0
    );
  }

  async page(beforeId: number | undefined, limit: number): Promise<AuditRow[]> {
    return (await this.pool.query<AuditRow>('SELECT * FROM "AuditEntry" WHERE "id" < $1 ORDER BY "id" DESC LIMIT $2', [beforeId ?? 2 ** 31 - 1, limit])).rows;
  }
}
