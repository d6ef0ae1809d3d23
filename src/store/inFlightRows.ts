import { dateOf, sqlDate, type Sql } from './Sql.js';
import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import type { InFlightRow, NewInFlightRow } from '../domain/historyPort.js';

export function allInFlight(sql: Sql): InFlightRow[] {
  return sql
    .all<Omit<InFlightRow, 'createdAt'> & { createdAt: string }>('SELECT * FROM "InFlightChange"')
    .map((row) => ({ ...row, createdAt: dateOf(row.createdAt) }));
}

/** Inserts or replaces the row of (cluster, kind, namespace, name). */
export function putInFlight(sql: Sql, row: NewInFlightRow, now: Date): void {
  sql.run(
    'INSERT OR REPLACE INTO "InFlightChange" ("cluster", "kind", "namespace", "name", "payload", "createdAt") VALUES (?, ?, ?, ?, ?, ?)',
    row.cluster ?? LOCAL_CLUSTER,
    row.kind,
    row.namespace,
    row.name,
    row.payload,
    sqlDate(now),
  );
}

export function deleteInFlight(sql: Sql, kind: string, namespace: string, name: string, cluster = LOCAL_CLUSTER): number {
  return sql.run('DELETE FROM "InFlightChange" WHERE "cluster" = ? AND "kind" = ? AND "namespace" = ? AND "name" = ?', cluster, kind, namespace, name).changes;
}

export type { InFlightRow };
