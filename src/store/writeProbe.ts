import { hostname } from 'node:os';
import { UnavailableError } from '../errors.js';
import { isBusy, sqlDate, type Sql } from './Sql.js';

export const HOLDER = `${hostname()}:${process.pid}`;

/**
 * Throws when the database cannot be written right now (disk full, read-only volume, I/O error). A lock held by
 * another writer proves nothing either way and counts as writable: that writer is writing.
 */
export function checkDatabaseWritable(sql: Sql): void {
  try {
    sql.transactionNow((tx) =>
      tx.run(
        'INSERT INTO "WriteProbe" ("holder", "checkedAt") VALUES (?, ?) ON CONFLICT("holder") DO UPDATE SET "checkedAt" = excluded."checkedAt"',
        HOLDER,
        sqlDate(new Date()),
      ),
    );
  } catch (error) {
    if (isBusy(error)) return;
    throw new UnavailableError(`the database cannot be written: ${(error as Error).message}`, { cause: error });
  }
}
