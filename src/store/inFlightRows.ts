import { dateOf, sqlDate, type Sql } from './Sql.js';
import type { InFlightRow } from '../domain/historyPort.js';

export function allInFlight(sql: Sql): InFlightRow[] {
  return sql
    .all<Omit<InFlightRow, 'createdAt'> & { createdAt: string }>('SELECT * FROM "InFlightChange"')
    .map((row) => ({ ...row, createdAt: dateOf(row.createdAt) }));
}

/** Inserts or replaces the row of (kind, namespace, name). */
export function putInFlight(sql: Sql, row: Omit<InFlightRow, 'createdAt'>, now: Date): void {
  sql.run(
    'INSERT OR REPLACE INTO "InFlightChange" ("kind", "namespace", "name", "payload", "createdAt") VALUES (?, ?, ?, ?, ?)',
    row.kind,
    row.namespace,
    row.name,
    row.payload,
    sqlDate(now),
  );
}

export function deleteInFlight(sql: Sql, kind: string, namespace: string, name: string): void {
  sql.run('DELETE FROM "InFlightChange" WHERE "kind" = ? AND "namespace" = ? AND "name" = ?', kind, namespace, name);
}

export type { InFlightRow };
