import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { InProcessEventBus } from '../../../src/domain/EventBus.js';
import { EventLog } from '../../../src/domain/EventLog.js';
import { EventType, type StoredEvent } from '../../../src/domain/events.js';
import { openDatabase, type Database } from '../../../src/store/db.js';
import { LISTENER_APPLICATION_NAME } from '../../../src/store/postgres/PgEventNotifier.js';
import { describeWithPostgres } from '../../helpers/postgres.js';
import { until } from '../../helpers/until.js';
import { eventOf, untypedEvent } from '../../helpers/events.js';

/** One replica as app.ts wires it: its own pools, its own LISTEN connection, an EventLog publishing from the store. */
interface Replica {
  db: Database;
  events: EventLog;
  /** Times the LISTEN connection came back after it was lost (app.ts resyncs the controllers then). */
  reconnects: number;
  stop(): Promise<void>;
}

async function replica(url: string): Promise<Replica> {
  const db = await openDatabase(url);
  const events = new EventLog(db.store, new InProcessEventBus(), { publishFromStore: true });
  const replica: Replica = {
    db,
    events,
    reconnects: 0,
    async stop() {
      await watcher.stop();
      await db.close();
    },
  };
  const watcher = await db.watchEvents(
    (upTo) => void events.catchUp(upTo),
    () => {},
    () => replica.reconnects++,
  );
  return replica;
}

/** Reads a stream in the background, as a subscriber would. */
function follow(events: EventLog, after: number) {
  const seen: StoredEvent[] = [];
  const stream = events.stream({ after });
  const done = (async () => {
    for await (const event of stream) seen.push(event);
  })();
  return { seen, stop: async () => void (await stream.return?.(), await done) };
}

describeWithPostgres('the live feed of replicas on PostgreSQL', (server) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  it('catches up from the table after reconnecting: its subscriber sees every event committed meanwhile, once, in id order', async () => {
    const url = await server().createDatabase();
    const database = new URL(url).pathname.slice(1);
    const writer = await replica(url);
    cleanups.push(() => writer.stop());
    const reader = await replica(url);
    cleanups.push(() => reader.stop());
    const listeners = async () =>
      (
        await server().admin<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = $2', [
          LISTENER_APPLICATION_NAME,
          database,
        ])
      ).rows[0]!.n;
    await until('both replicas listening', async () => (await listeners()) === 2);

    const start = await writer.events.lastEventId();
    const subscriber = follow(reader.events, start);
    cleanups.push(() => subscriber.stop());
    const append = async (n: number, phase: string) => {
      // One transaction each, as reconcilers finishing one by one commit them.
      for (let i = 0; i < n; i++) await writer.events.append(untypedEvent({ type: EventType.AgentRecreated, name: `${phase}-${i}`, payload: { phase } }));
    };
    await append(10, 'before');
    await until('the reader to see the first events', () => subscriber.seen.length === 10);

    // Cut the LISTEN connections and keep them from coming back (existing pooled connections stay), so that the
    // next events are certainly committed while the reader is not listening: their notifications are lost.
    await server().admin(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`);
    cleanups.push(() =>
      server()
        .admin(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`)
        .then(() => undefined),
    );
    const terminated = await server().admin<{ n: number }>(
      'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = $2',
      [LISTENER_APPLICATION_NAME, database],
    );
    expect(terminated.rows[0]!.n).toBe(2);
    await until('the listeners to be gone', async () => (await listeners()) === 0);
    await append(30, 'while-disconnected');
    expect(await listeners()).toBe(0);

    await server().admin(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`);
    expect([writer.reconnects, reader.reconnects]).toEqual([0, 0]);
    await until('the listeners to reconnect', async () => (await listeners()) === 2);
    await until('both replicas to report the database back', () => writer.reconnects === 1 && reader.reconnects === 1);
    await until('the reader to catch up', () => subscriber.seen.length >= 40);
    // Live again after the reconnect.
    await append(10, 'after');
    await until('the reader to see the last events', () => subscriber.seen.length >= 50);

    const direct = new pg.Client({ connectionString: url });
    await direct.connect();
    cleanups.push(() => direct.end());
    const stored = (await direct.query<{ id: number }>('SELECT "id" FROM "Event" WHERE "id" > $1 ORDER BY "id"', [start])).rows.map((r) => r.id);
    expect(stored).toHaveLength(50);
    expect(subscriber.seen.map((e) => e.id)).toEqual(stored);
    expect(subscriber.seen.map((e) => e.payload.phase)).toEqual([
      ...Array<string>(10).fill('before'),
      ...Array<string>(30).fill('while-disconnected'),
      ...Array<string>(10).fill('after'),
    ]);
  });

  it('gives every replica every event once, in id order and as the store holds it, with writers on both and ids lost to rollbacks', async () => {
    const url = await server().createDatabase();
    const a = await replica(url);
    cleanups.push(() => a.stop());
    const b = await replica(url);
    cleanups.push(() => b.stop());
    const start = await a.events.lastEventId();
    const onA = follow(a.events, start);
    cleanups.push(() => onA.stop());
    const onB = follow(b.events, start);
    cleanups.push(() => onB.stop());

    // A transaction that draws ids and rolls back leaves a hole in the ids; the next commit does not follow the last
    // published id, which must not stop anything from being published.
    const rolledBack = (r: Replica) =>
      r.db.store
        .transactionWithEvents(
          // biome-ignore lint/correctness/useYield: nothing to change but the events.
          function* () {
            // The second event is refused (NOT NULL) after the first drew its id: the transaction rolls back.
            return { result: undefined, events: [eventOf(EventType.AgentRecreated, { name: 'never' }), untypedEvent({ type: null as unknown as EventType })] };
          },
        )
        .catch(() => undefined);
    const writes = (r: Replica, name: string) =>
      (async () => {
        for (let i = 0; i < 40; i++) {
          if (i % 7 === 3) await rolledBack(r);
          // Alone or several in one transaction (appends in one tick are grouped).
          await Promise.all(
            Array.from({ length: 1 + (i % 3) }, (_, j) =>
              r.events.append(untypedEvent({ type: EventType.AgentRecreated, name: `${name}-${i}-${j}`, payload: { i, j } })),
            ),
          );
        }
      })();
    await Promise.all([writes(a, 'a'), writes(b, 'b')]);

    const stored = await a.events.listAfter({}, start, 1_000);
    const perWriter = Array.from({ length: 40 }, (_, i) => 1 + (i % 3)).reduce((sum, n) => sum + n, 0);
    expect(stored).toHaveLength(2 * perWriter);
    expect(stored.some((e) => e.name === 'never')).toBe(false);
    await until('both replicas to publish every event', () => onA.seen.length >= stored.length && onB.seen.length >= stored.length);
    // Give a duplicate the time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(onA.seen).toEqual(stored);
    expect(onB.seen).toEqual(stored);
  });
});
