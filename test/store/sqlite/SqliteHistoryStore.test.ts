import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, describe } from 'vitest';
import { applyMigrations } from '../../../src/store/migrate.js';
import { SqliteHistoryStore } from '../../../src/store/sqlite/SqliteHistoryStore.js';
import { Sql, sqlDate } from '../../../src/store/Sql.js';
import { historyContract } from '../historyContract.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/SqliteAuditStore.js';
import { SqliteTokenStore } from '../../../src/store/sqlite/SqliteTokenStore.js';
import { tokenAuditContract } from '../tokenAuditContract.js';
import { notificationContract } from '../notificationContract.js';
import { SqliteNotificationStore } from '../../../src/store/sqlite/SqliteNotificationStore.js';
import { SqliteMemberClusterStore } from '../../../src/store/sqlite/SqliteMemberClusterStore.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane contract sqlite '));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let databases = 0;
let file = '';

describe('history store contract: SQLite', () => {
  historyContract(() => ({
    async open() {
      file = path.join(dir, `h${++databases}.db`);
      // As openDatabase prepares the file: WAL, then the committed migrations.
      const admin = new Sqlite(file);
      admin.pragma('journal_mode = WAL');
      applyMigrations(admin);
      admin.close();
      return new SqliteHistoryStore(Sql.open(file));
    },
    async connect() {
      return new SqliteHistoryStore(Sql.open(file));
    },
    async restampNewestEvent(at) {
      const sql = Sql.open(file);
      sql.run('UPDATE "Event" SET "createdAt" = ? WHERE "id" = (SELECT MAX("id") FROM "Event")', sqlDate(at));
      sql.close();
    },
  }));
});

describe('token and audit store contract: SQLite', () => {
  let tokensFile = '';
  const storesOn = (sql: Sql) => ({ tokens: new SqliteTokenStore(sql), audit: new SqliteAuditStore(sql), close: async () => sql.close() });
  tokenAuditContract(() => ({
    announces: false,
    async open() {
      tokensFile = path.join(dir, `t${++databases}.db`);
      const admin = new Sqlite(tokensFile);
      admin.pragma('journal_mode = WAL');
      applyMigrations(admin);
      admin.close();
      return storesOn(Sql.open(tokensFile));
    },
    async connect() {
      return storesOn(Sql.open(tokensFile));
    },
  }));
});

describe('notification store contract: SQLite', () => {
  let notifyFile = '';
  const storesOn = (sql: Sql) => ({
    history: new SqliteHistoryStore(sql),
    notifications: new SqliteNotificationStore(sql),
    clusters: new SqliteMemberClusterStore(sql),
    close: async () => sql.close(),
  });
  notificationContract(() => ({
    async open() {
      notifyFile = path.join(dir, `n${++databases}.db`);
      const admin = new Sqlite(notifyFile);
      admin.pragma('journal_mode = WAL');
      applyMigrations(admin);
      admin.close();
      return storesOn(Sql.open(notifyFile));
    },
    async connect() {
      return storesOn(Sql.open(notifyFile));
    },
  }));
});
