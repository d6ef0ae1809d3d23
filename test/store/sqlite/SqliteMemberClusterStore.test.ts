import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, describe } from 'vitest';
import { applyMigrations } from '../../../src/store/migrate.js';
import { Sql } from '../../../src/store/Sql.js';
import { SqliteMemberClusterStore } from '../../../src/store/sqlite/SqliteMemberClusterStore.js';
import { memberClusterContract } from '../memberClusterContract.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member clusters sqlite '));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('member cluster store contract: SQLite', () => {
  const file = path.join(dir, 'clusters.db');
  const on = () => {
    const sql = Sql.open(file);
    return { store: new SqliteMemberClusterStore(sql), close: async () => sql.close() };
  };
  memberClusterContract(() => ({
    async open() {
      // As openDatabase prepares the file: WAL, then the committed migrations.
      const admin = new Sqlite(file);
      admin.pragma('journal_mode = WAL');
      applyMigrations(admin);
      admin.close();
      return on();
    },
    connect: async () => on(),
  }));
});
