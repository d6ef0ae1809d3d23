import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import { InFlightChanges } from '../../src/domain/InFlightChanges.js';
import { openSqliteDatabase as openDatabase, type SqliteDatabase as Database } from '../../src/store/db.js';
import { dateOf, Sql, sqlDate } from '../../src/store/Sql.js';
import { SqliteHistoryStore } from '../../src/store/sqlite/SqliteHistoryStore.js';
import { UnavailableError } from '../../src/errors.js';
import type { PrismaClient } from '../../src/store/generated/client.js';
import { openTestPrisma } from '../helpers/prisma.js';
import { until } from '../helpers/until.js';
import { eventOf } from '../helpers/events.js';

describe('Sql (the history hot path)', () => {
  let dir: string;
  let db: Database;
  let prisma: PrismaClient;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-sql-'));
    db = await openDatabase(`file:${path.join(dir, 'h.db')}`);
    prisma = await openTestPrisma(db.file);
  });
  afterEach(async () => {
    await prisma.$disconnect();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for a lock another connection holds without blocking the event loop, then commits', async () => {
    const other = new Sqlite(db.file);
    other.prepare('BEGIN IMMEDIATE').run();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const write = db.sql.transaction((sql) =>
      sql.run(`INSERT INTO "ApiToken" ("id", "name", "role", "hash", "createdAt") VALUES ('t1', 'n', 'viewer', 'h', ?)`, sqlDate(new Date())),
    );
    let written = false;
    void write.then(() => (written = true));
    // The event loop keeps turning while the write waits for the lock: timers fire, and the write is still waiting.
    await until('timers to run while the write waits for the lock', () => ticks > 3);
    expect(written).toBe(false);
    other.prepare('COMMIT').run();
    await write;
    clearInterval(ticker);
    other.close();
    expect(ticks).toBeGreaterThan(3); // timers ran while the write waited
    expect(await prisma.apiToken.count()).toBe(1);
  });

  it('gives up with UNAVAILABLE when the lock is held longer than it waits, and writes nothing', async () => {
    const sql = new Sql(new Sqlite(db.file, { timeout: 0 }), 100);
    const other = new Sqlite(db.file);
    other.prepare('BEGIN IMMEDIATE').run();
    await expect(
      sql.transaction((s) =>
        s.run(`INSERT INTO "ApiToken" ("id", "name", "role", "hash", "createdAt") VALUES ('t2', 'n2', 'viewer', 'h2', ?)`, sqlDate(new Date())),
      ),
    ).rejects.toBeInstanceOf(UnavailableError);
    other.prepare('ROLLBACK').run();
    other.close();
    sql.close();
    expect(await prisma.apiToken.count()).toBe(0);
  });

  it('rolls a failed body back entirely and never calls afterCommit', async () => {
    let after = 0;
    await expect(
      db.sql.transaction(
        (sql) => {
          sql.run(`INSERT INTO "ApiToken" ("id", "name", "role", "hash", "createdAt") VALUES ('t3', 'n3', 'viewer', 'h3', ?)`, sqlDate(new Date()));
          throw new Error('boom');
        },
        () => after++,
      ),
    ).rejects.toThrow('boom');
    expect(after).toBe(0);
    expect(await prisma.apiToken.count()).toBe(0);
  });

  it('writes DateTimes that Prisma reads back as the same instant, and reads what Prisma and SQLite write', async () => {
    const at = new Date('2026-12-01T08:09:10.123Z');
    db.sql.run(`INSERT INTO "ApiToken" ("id", "name", "role", "hash", "createdAt") VALUES ('t4', 'n4', 'viewer', 'h4', ?)`, sqlDate(at));
    expect((await prisma.apiToken.findUnique({ where: { id: 't4' } }))!.createdAt.toISOString()).toBe(at.toISOString());
    const viaPrisma = await prisma.apiToken.create({ data: { id: 't5', name: 'n5', role: 'viewer', hash: 'h5', createdAt: at } });
    const raw = db.sql.get<{ createdAt: string }>('SELECT "createdAt" FROM "ApiToken" WHERE "id" = ?', viaPrisma.id)!;
    expect(dateOf(raw.createdAt).toISOString()).toBe(at.toISOString());
    expect(dateOf('2026-12-01 08:09:10').toISOString()).toBe('2026-12-01T08:09:10.000Z');
  });

  it('reads its own DateTime form field by field exactly as the date parser does, and anything else through the parser', () => {
    const parsed = (text: string) => {
      const date = new Date(text);
      return Number.isNaN(date.getTime()) ? 'invalid' : date.toISOString();
    };
    const read = (text: string) => {
      const date = dateOf(text);
      return Number.isNaN(date.getTime()) ? 'invalid' : date.toISOString();
    };
    // Every instant's own form: leap days, year ends, the millisecond edges, years before 1970 and after 9999's start.
    const instants = [0, 951_782_400_000, 1_709_164_800_123, 1_798_761_599_999, -62_135_596_800_000, 253_402_300_799_999, Date.UTC(2026, 11, 1, 8, 9, 10, 123)];
    for (let i = 0; i < 2000; i++) instants.push(Math.floor(Math.sin(i + 1) * 4e12));
    for (const at of instants) {
      const text = sqlDate(new Date(at));
      expect(read(text), text).toBe(parsed(text));
      expect(read(text)).toBe(new Date(at).toISOString());
    }
    // Near misses of the form go to the parser and read as it reads them (valid or not).
    for (const text of [
      '2026-02-31T08:09:10.123+00:00',
      '2026-13-01T08:09:10.123+00:00',
      '2026-12-01T24:09:10.123+00:00',
      '2026-12-01T08:60:10.123+00:00',
      '2026-12-01T08:09:10.123+01:00',
      '2026-12-01T08:09:10.12a+00:00',
      '0099-12-01T08:09:10.123+00:00',
      '2026-12-01X08:09:10.123+00:00',
      '2026-12-01T08:09:10.123Z',
    ]) {
      expect(read(text), text).toBe(parsed(text));
    }
  });

  it('keeps raw-mode statements apart from the same text read as objects', () => {
    db.sql.run(`INSERT INTO "ApiToken" ("id", "name", "role", "hash", "createdAt") VALUES ('t6', 'n6', 'viewer', 'h6', ?)`, sqlDate(new Date()));
    const text = 'SELECT "id", "name" FROM "ApiToken" WHERE "id" = ?';
    expect(db.sql.rawAll(text, ['t6'])).toEqual([['t6', 'n6']]);
    expect(db.sql.rawGet(text, ['t6'])).toEqual(['t6', 'n6']);
    expect(db.sql.all(text, 't6')).toEqual([{ id: 't6', name: 'n6' }]);
    expect(db.sql.rawGet(text, ['nobody'])).toBeUndefined();
  });
});

describe('InFlightChanges', () => {
  let dir: string;
  let db: Database;
  let log: EventLog;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-inflight-'));
    db = await openDatabase(`file:${path.join(dir, 'h.db')}`);
    log = new EventLog(db.store, new InProcessEventBus());
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps a note across a restart and completes it together with its event, exactly once', async () => {
    const notes = new InFlightChanges(db.store, log).of<{ oldUid: string }>('AGENT_POOL');
    await notes.put('default', 'net-1', { oldUid: 'u1' });
    // A new process (or leader) sees the note from the store once it has loaded it.
    const restarted = new InFlightChanges(db.store, log);
    await restarted.reload();
    const after = restarted.of<{ oldUid: string }>('AGENT_POOL');
    expect(after.get('default', 'net-1')).toEqual({ oldUid: 'u1' });
    expect(after.get('default', 'net-2')).toBeUndefined();
    await after.complete('default', 'net-1', [
      {
        type: 'AgentRecreated',
        kind: 'AGENT_POOL',
        namespace: 'default',
        name: 'net-1',
        payload: { pool: 'default/net-1', newImage: 'agent:v2', oldPodUid: 'u1' },
      },
    ]);
    expect(after.get('default', 'net-1')).toBeUndefined();
    const again = new InFlightChanges(db.store, log);
    await again.reload();
    expect(again.get('AGENT_POOL', 'default', 'net-1')).toBeUndefined();
    const events = await log.listAfter({ types: ['AgentRecreated'] }, 0, 10);
    expect(events.map((e) => e.payload)).toEqual([{ pool: 'default/net-1', newImage: 'agent:v2', oldPodUid: 'u1' }]);
  });

  it('leaves the note in place when the completing transaction fails', async () => {
    const changes = new InFlightChanges(db.store, log);
    const notes = changes.of<{ n: number }>('AGENT_POOL');
    await notes.put('default', 'net-1', { n: 1 });
    const other = new Sqlite(db.file);
    other.prepare('BEGIN IMMEDIATE').run();
    const slow = new Sql(new Sqlite(db.file, { timeout: 0 }), 50);
    const slowStore = new SqliteHistoryStore(slow);
    const failing = new InFlightChanges(slowStore, new EventLog(slowStore, new InProcessEventBus())).of<{ n: number }>('AGENT_POOL');
    await expect(
      failing.complete('default', 'net-1', [eventOf('AgentRecreated', { kind: 'AGENT_POOL', namespace: 'default', name: 'net-1' })]),
    ).rejects.toBeInstanceOf(UnavailableError);
    other.prepare('ROLLBACK').run();
    other.close();
    slow.close();
    await changes.reload();
    expect(notes.get('default', 'net-1')).toEqual({ n: 1 });
    expect(await log.listAfter({ types: ['AgentRecreated'] }, 0, 10)).toEqual([]);
  });
});
