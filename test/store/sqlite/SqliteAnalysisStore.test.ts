import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe } from 'vitest';
import { openSqliteDatabase } from '../../../src/store/db.js';
import { analysisStoreContract } from '../analysisContract.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane analysis sqlite '));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('analysis store contract: SQLite', () => {
  analysisStoreContract(() => ({
    async open() {
      // As the service opens it: migrations applied, then the store on rollplane's connection.
      const db = await openSqliteDatabase(`file:${path.join(dir, 'analysis.db')}`);
      const storedQueries = async (runId: string) =>
        db.sql.all<{ query: string; baselineQuery: string | null }>(
          'SELECT "query", "baselineQuery" FROM "AnalysisMeasurement" WHERE "runId" = ? ORDER BY "id"',
          runId,
        );
      return { store: db.analysis, storedQueries, close: () => db.close() };
    },
  }));
});
