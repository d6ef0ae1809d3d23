import pg from 'pg';
import { expect, it } from 'vitest';
import { EventType } from '../../../src/domain/events.js';
import type { HistoryStore } from '../../../src/store/port.js';
import { openPgHistoryStore } from '../../../src/store/postgres/open.js';
import { EVENT_LOG_LOCK } from '../../../src/store/postgres/PgHistoryStore.js';
import { isoOf } from '../../../src/store/postgres/pool.js';
import { describeWithPostgres } from '../../helpers/postgres.js';
import { historyContract } from '../historyContract.js';
import { PgAuditStore } from '../../../src/store/postgres/PgAuditStore.js';
import { PgTokenStore } from '../../../src/store/postgres/PgTokenStore.js';
import { tokenAuditContract } from '../tokenAuditContract.js';
import { notificationContract } from '../notificationContract.js';
import { PgNotificationStore } from '../../../src/store/postgres/PgNotificationStore.js';
import { PgMemberClusterStore } from '../../../src/store/postgres/PgMemberClusterStore.js';
import { until } from '../../helpers/until.js';
import { eventOf } from '../../helpers/events.js';

describeWithPostgres('history store contract: PostgreSQL', (server) => {
  let url = '';
  historyContract(() => ({
    async open() {
      url = await server().createDatabase();
      return (await openPgHistoryStore(url)).store;
    },
    async connect() {
      return (await openPgHistoryStore(url)).store;
    },
    async restampNewestEvent(at) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('UPDATE "Event" SET "createdAt" = $1 WHERE "id" = (SELECT MAX("id") FROM "Event")', [isoOf(at)]);
      await client.end();
    },
  }));

  let tokensUrl = '';
  const storesOn = async (dbUrl: string) => {
    const { store, pool } = await openPgHistoryStore(dbUrl, { poolSize: 2 });
    return { tokens: new PgTokenStore(pool, dbUrl), audit: new PgAuditStore(pool), close: () => store.close() };
  };
  tokenAuditContract(() => ({
    announces: true,
    async open() {
      tokensUrl = await server().createDatabase();
      return storesOn(tokensUrl);
    },
    connect: () => storesOn(tokensUrl),
  }));

  let notifyUrl = '';
  const notificationStoresOn = async (dbUrl: string) => {
    const { store, pool } = await openPgHistoryStore(dbUrl, { poolSize: 3 });
    return { history: store, notifications: new PgNotificationStore(pool), clusters: new PgMemberClusterStore(pool), close: () => store.close() };
  };
  notificationContract(() => ({
    async open() {
      notifyUrl = await server().createDatabase();
      return notificationStoresOn(notifyUrl);
    },
    connect: () => notificationStoresOn(notifyUrl),
  }));

  it('orders event ids across concurrent writers so that an `id > cursor` reader never misses one, and stamps them in that order', async () => {
    const dbUrl = await server().createDatabase();
    // Three writers with pools of their own, as three replicas would be.
    const writers: HistoryStore[] = [];
    for (let i = 0; i < 3; i++) writers.push((await openPgHistoryStore(dbUrl, { poolSize: 4 })).store);
    const reader = (await openPgHistoryStore(dbUrl, { poolSize: 1 })).store;
    try {
      const committed: number[] = [];
      let writing = true;
      const seen: number[] = [];
      const stampedAt: number[] = [];
      const follow = (async () => {
        let cursor = 0;
        // Tight loop like a feed that is always behind; stops after a last read once every writer is done.
        for (let last = false; !last; ) {
          last = !writing;
          for (const e of (await reader.read.listEventsAfter({}, cursor, 1000)).events) {
            seen.push(e.id);
            stampedAt.push(e.createdAt.getTime());
            cursor = e.id;
          }
        }
      })();
      const loops = writers.flatMap((store, w) =>
        Array.from({ length: 4 }, async (_, l) => {
          for (let i = 0; i < 25; i++) {
            const { stored: events } = await store.transactionWithEvents(function* () {
              return {
                result: undefined,
                events: Array.from({ length: 1 + ((i + l) % 3) }, () => eventOf(EventType.TargetStateChanged, { rolloutId: `w${w}`, name: `l${l}-${i}` })),
              };
            });
            committed.push(...events.map((e) => e.id));
          }
        }),
      );
      await Promise.all(loops);
      writing = false;
      await follow;
      expect(committed.length).toBeGreaterThan(300);
      const missed = committed.filter((id) => !seen.includes(id));
      expect(missed).toEqual([]);
      expect(seen.length).toBe(committed.length);
      expect(seen.every((id, i) => i === 0 || id > seen[i - 1]!)).toBe(true);
      // The database's clock, read under the event-log lock: createdAt never goes back in id order, whoever wrote.
      expect(stampedAt.every((t, i) => i === 0 || t >= stampedAt[i - 1]!)).toBe(true);
    } finally {
      for (const s of [...writers, reader]) await s.close();
    }
  });

  it('holds back every writer while another holds the event-log lock with ids drawn and not yet committed', async () => {
    const dbUrl = await server().createDatabase();
    const { store } = await openPgHistoryStore(dbUrl, { poolSize: 2 });
    // Another writer following the same protocol, stopped between drawing its id and committing, as a replica whose
    // COMMIT is slow to arrive. Without the lock the store's event would commit first, with the larger id, and a reader
    // of `id > cursor` would move past the smaller one before it commits.
    const other = new pg.Client({ connectionString: dbUrl });
    await other.connect();
    try {
      const before = await store.read.lastEventId();
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1)', [EVENT_LOG_LOCK]);
      const held = (
        await other.query<{ id: number }>(`INSERT INTO "Event" ("type", "payload", "createdAt") VALUES ('AgentRecreated', '{}', now()) RETURNING "id"`)
      ).rows[0]!.id;
      let done = false;
      const appended = store
        .transactionWithEvents(
          // biome-ignore lint/correctness/useYield: nothing to change but the events.
          function* () {
            return { result: undefined, events: [eventOf(EventType.AgentRecreated, { name: 'behind' })] };
          },
        )
        .finally(() => {
          done = true;
        });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(done).toBe(false);
      expect((await store.read.listEventsAfter({}, before, 10)).events).toEqual([]);
      await other.query('COMMIT');
      const { stored } = await appended;
      expect(stored[0]!.id).toBeGreaterThan(held);
      expect((await store.read.listEventsAfter({}, before, 10)).events.map((e) => e.id)).toEqual([held, stored[0]!.id]);
    } finally {
      await other.end();
      await store.close();
    }
  });

  it('makes a launch wait for a launch of the same kind on another replica, and not for one of another kind', async () => {
    const dbUrl = await server().createDatabase();
    const a = (await openPgHistoryStore(dbUrl, { poolSize: 2 })).store;
    const b = (await openPgHistoryStore(dbUrl, { poolSize: 2 })).store;
    const waiting = async () =>
      (await server().admin<{ n: number }>(`SELECT COUNT(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND NOT granted`)).rows[0]!.n;
    let release!: () => void;
    try {
      const order: string[] = [];
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const hasLock = new Promise<void>((resolve) => (locked = resolve));
      const first = a.transaction(function* (tx) {
        yield* tx.lockLaunches('AGENT_POOL');
        locked();
        // Holds the lock until released (the PostgreSQL store awaits a yielded promise inside the transaction).
        yield held;
        order.push('first commits');
      });
      await hasLock;

      // Another kind: runs to its end while the first still holds its lock.
      let otherDone = false;
      const other = b
        .transaction(function* (tx) {
          yield* tx.lockLaunches('NODE_AGENT');
        })
        .then(() => (otherDone = true));
      await until('the other kind’s launch to finish or to wait', async () => otherDone || (await waiting()) > 0);
      expect(otherDone).toBe(true);
      await other;

      // The same kind: waits for the first to commit.
      const same = b.transaction(function* (tx) {
        yield* tx.lockLaunches('AGENT_POOL');
        order.push('second locks');
      });
      await until('the second launch of the kind to wait for the lock', async () => (await waiting()) === 1);
      expect(order).toEqual([]);
      release();
      await Promise.all([first, same]);
      expect(order).toEqual(['first commits', 'second locks']);
      expect(await waiting()).toBe(0);
    } finally {
      release?.();
      await a.close();
      await b.close();
    }
  });
});
