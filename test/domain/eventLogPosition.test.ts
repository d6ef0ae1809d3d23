import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import { EventType, type StoredEvent } from '../../src/domain/events.js';
import type { HistoryStore } from '../../src/domain/historyPort.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { until } from '../helpers/until.js';
import { eventOf } from '../helpers/events.js';

/**
 * Issue 34: the live-feed test on PostgreSQL timed out on a loaded machine. A replica publishing from the store reads
 * its starting position when it is made; a subscriber's first read of the store could run before that read (another
 * pool connection, opened faster), so events another replica committed in between were neither in the subscriber's
 * read nor published to it: its feed stopped there for good. The store here is SQLite (the publishing logic does not
 * depend on it) with the starting read held back until the test lets it go.
 */
const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-eventlog-'));
const opened: SqliteDatabase[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.sql.close();
});

async function open(): Promise<SqliteDatabase> {
  const db = await openSqliteDatabase(`file:${path.join(dir, 'h.db')}`);
  opened.push(db);
  return db;
}

/** `store` whose first lastEventId read waits for `release`, as a slow connection would. */
function withSlowFirstPosition(store: HistoryStore): { store: HistoryStore; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let first = true;
  const read = new Proxy(store.read, {
    get(target, property, receiver) {
      if (property !== 'lastEventId') return Reflect.get(target, property, receiver);
      return async () => {
        if (!first) return target.lastEventId();
        first = false;
        await released;
        return target.lastEventId();
      };
    },
  });
  return { store: Object.assign(Object.create(Object.getPrototypeOf(store)), store, { read }) as HistoryStore, release };
}

it('feeds a subscriber every event committed by another writer while its own starting position was still being read', async () => {
  const writerDb = await open();
  const readerDb = await open();
  const writer = new EventLog(writerDb.store, new InProcessEventBus());
  const slow = withSlowFirstPosition(readerDb.store);
  const reader = new EventLog(slow.store, new InProcessEventBus(), { publishFromStore: true });
  const seen: StoredEvent[] = [];
  const stream = reader.stream({ after: 0 });
  const following = (async () => {
    for await (const event of stream) seen.push(event);
  })();
  // Let the subscriber's first read run (SQLite answers within the microtasks one turn of the loop flushes), then
  // another replica commits, then the reader learns its position.
  await new Promise((resolve) => setImmediate(resolve));
  const committed = await writer.append(eventOf(EventType.AgentRecreated, { name: 'between' }));
  slow.release();
  await reader.catchUp();
  // A later commit, announced to the reader as another replica's would be.
  const later = await writer.append(eventOf(EventType.AgentRecreated, { name: 'after' }));
  await reader.catchUp(later[0]!.id);
  await until('the subscriber to have both events', () => seen.length >= 2, 5_000);
  await stream.return?.();
  await following;
  expect(seen.map((e) => e.id)).toEqual([committed[0]!.id, later[0]!.id]);
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));
