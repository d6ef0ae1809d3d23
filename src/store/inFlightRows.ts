import { dateOf, sqlDate, type Sql } from './Sql.js';

/** The InFlightChange table (see schema.prisma): one row of work in flight per (kind, namespace, name). */
export interface InFlightRow {
  kind: string;
  namespace: string;
  name: string;
  payload: string;
  createdAt: Date;
}

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
