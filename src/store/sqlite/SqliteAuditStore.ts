import type { AuditRow, AuditStore } from '../../domain/AuditStore.js';
import { dateOf, sqlDate, type Sql } from '../Sql.js';

/** The audit log on SQLite, on rollplane's prepared-statement connection (one insert per mutation). */
export class SqliteAuditStore implements AuditStore {
  constructor(private readonly sql: Sql) {}

  async insert(entry: Parameters<AuditStore['insert']>[0], now: Date): Promise<void> {
    await this.sql.transaction((sql) =>
      sql.run(
        'INSERT INTO "AuditEntry" ("actor", "role", "operation", "input", "result", "message", "sourceAddr", "cluster", "createdAt") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        entry.actor,
        entry.role,
        entry.operation,
        entry.input,
        entry.result,
        entry.message,
        entry.sourceAddr,
        entry.cluster ?? null,
        sqlDate(now),
      ),
    );
  }

  async deleteBefore(cutoff: Date): Promise<number> {
    // The column holds the ISO text every writer here uses (sqlDate, as Prisma wrote it), which sorts as time does.
    return this.sql.transaction((sql) => sql.run('DELETE FROM "AuditEntry" WHERE "createdAt" < ?', sqlDate(cutoff)).changes);
  }

  async keepNewest(keep: number): Promise<number> {
    return this.sql.transaction(
      (sql) => sql.run('DELETE FROM "AuditEntry" WHERE "id" <= (SELECT "id" FROM "AuditEntry" ORDER BY "id" DESC LIMIT 1 OFFSET ?)', keep).changes,
    );
  }

  async page(beforeId: number | undefined, limit: number): Promise<AuditRow[]> {
    return this.sql
      .all<Omit<AuditRow, 'createdAt'> & { createdAt: string }>(
        'SELECT * FROM "AuditEntry" WHERE "id" < ? ORDER BY "id" DESC LIMIT ?',
        beforeId ?? Number.MAX_SAFE_INTEGER,
        limit,
      )
      .map((r) => ({ ...r, createdAt: dateOf(r.createdAt) }));
  }
}
