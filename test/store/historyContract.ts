import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, matchesFilter, type EventFilter, type NewEvent, type StoredEvent } from '../../src/domain/events.js';
import { EVENT_SCAN_WINDOW } from '../../src/domain/historyPort.js';
import { servedByIndex } from '../../src/store/eventReads.js';
import type { EventPage, HistoryStore, HistoryTx, NewRolloutRow, NewTargetRow, RolloutRow, Step } from '../../src/store/port.js';
import { untypedEvent } from '../helpers/events.js';

/**
 * The history port's contract (src/store/port.ts), written once and run against every store. `open` gives a fresh,
 * empty, migrated database per call; `connect` a second store (another process or replica) on the database of the
 * last `open`.
 */
export interface StoreFactory {
  open(): Promise<HistoryStore>;
  connect(): Promise<HistoryStore>;
  /** Sets the newest event's createdAt in the database of the last `open`, as a clock set back would leave it. */
  restampNewestEvent(at: Date): Promise<void>;
}

const T0 = new Date('2026-12-01T12:00:00.123Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

export function rolloutRow(id: string, extra: Partial<NewRolloutRow> = {}): NewRolloutRow {
  return {
    id,
    kind: 'AGENT_POOL',
    fromVersion: 'v1',
    toVersion: 'v2',
    selector: '{}',
    strategy: '{"maxUnavailable":1}',
    causeActor: 'ci',
    causeRunUrl: null,
    causeCommit: 'abc123',
    causeMessage: 'bump',
    idempotencyKey: null,
    idempotencyScope: '',
    rollbackOfId: null,
    startedBy: null,
    ...extra,
  };
}

/** Target `ordinal` of a rollout, named `<prefix>-<ordinal>`, changing v1 → v2. */
export function targetRow(rolloutId: string, ordinal: number, state: string, kind = 'AGENT_POOL', namespace = 'ns', prefix = 'pool'): NewTargetRow {
  return {
    id: `${rolloutId}.${ordinal}`,
    rolloutId,
    kind,
    namespace,
    name: `${prefix}-${ordinal}`,
    ordinal,
    state,
    fromVersion: 'v1',
    toVersion: 'v2',
    skipReason: null,
    finishedAt: null,
  };
}

/** Create-or-get by idempotency key, as the domain does it. */
function* createOnce(tx: HistoryTx, key: string, id: string, scope = SCOPE): Step<{ row: RolloutRow; created: boolean }> {
  const ref = { scope, key };
  const existing = yield* tx.findRolloutByIdempotencyKey(ref);
  if (existing) return { row: existing, created: false };
  const inserted = yield* tx.insertRollout(rolloutRow(id, { idempotencyKey: key, idempotencyScope: scope }), T0);
  if (inserted) return { row: inserted, created: true };
  return { row: (yield* tx.findRolloutByIdempotencyKey(ref))!, created: false };
}

/** As RolloutService.create: the rollout and the record of the request that made it, in one transaction. */
function* createWithRecord(tx: HistoryTx, key: string, id: string, requestHash: string, scope = SCOPE): Step<{ row: RolloutRow; created: boolean }> {
  const result = yield* createOnce(tx, key, id, scope);
  if (result.created) yield* tx.insertIdempotencyRecord({ scope, key, operation: 'AGENT_POOL', requestHash, rolloutId: id }, T0);
  return result;
}

/** The scope of the keys these tests use, unless a test says otherwise. */
const SCOPE = 'token:ci';

/** The store keeps whatever JSON it is given: these events' payloads need not be their type's (untypedEvent). */
const event = (type: EventType, extra: Omit<Parameters<typeof untypedEvent>[0], 'type'> = {}): NewEvent => untypedEvent({ type, ...extra });

export function historyContract(factory: () => StoreFactory): void {
  let store: HistoryStore;
  let stores: StoreFactory;
  const others: HistoryStore[] = [];
  beforeAll(async () => {
    stores = factory();
    store = await stores.open();
  });
  afterAll(async () => {
    for (const s of [store, ...others]) await s?.close();
  });
  const another = async () => {
    const s = await factory().connect();
    others.push(s);
    return s;
  };

  describe('event log', () => {
    /** The events of one read (an index serves these filters: a read is the whole answer up to `limit`). */
    const eventsAfter = async (...args: Parameters<HistoryStore['read']['listEventsAfter']>) => (await store.read.listEventsAfter(...args)).events;
    const eventsBefore = async (...args: Parameters<HistoryStore['read']['listEventsBefore']>) => (await store.read.listEventsBefore(...args)).events;
    /** Events appended by a transaction that changes nothing else. */
    const append = async (events: NewEvent[]) =>
      (
        await store.transactionWithEvents(
          // biome-ignore lint/correctness/useYield: nothing to change but the events.
          function* () {
            return { result: undefined, events };
          },
        )
      ).stored;

    it('appends in order, stamped on insertion, and reads back after a cursor, oldest first, limited', async () => {
      const before = await store.read.lastEventId();
      const startedAt = Date.now();
      const stored = await append([
        event(EventType.RolloutStateChanged, {
          rolloutId: 'r-ev',
          kind: 'AGENT_POOL',
          payload: { from: null, to: 'PENDING', n: 1.5, nested: { a: [1, 'x'] } },
        }),
        event(EventType.TargetStateChanged, { rolloutId: 'r-ev', kind: 'AGENT_POOL', namespace: 'ns', name: 'p1', payload: { to: 'PROGRESSING' } }),
        event(EventType.TargetFailed, { rolloutId: 'r-ev', kind: 'AGENT_POOL', namespace: 'ns', name: 'p1' }),
      ]);
      const endedAt = Date.now();
      const ids = stored.map((e) => e.id);
      expect(ids[0]).toBeGreaterThan(before);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      expect(new Set(ids).size).toBe(3);
      expect(await store.read.lastEventId()).toBe(ids[2]);

      const all = await eventsAfter({}, before, 100);
      expect(all).toEqual(stored);
      expect(all[0]).toMatchObject({
        type: 'RolloutStateChanged',
        rolloutId: 'r-ev',
        kind: 'AGENT_POOL',
        namespace: null,
        name: null,
        payload: { from: null, to: 'PENDING', n: 1.5, nested: { a: [1, 'x'] } },
      });
      expect(all[2]!.payload).toEqual({});
      // Stamped by the store during the transaction, one time for the batch (truncated to the column's milliseconds).
      for (const e of stored) expect(e.createdAt.getTime()).toBe(stored[0]!.createdAt.getTime());
      expect(stored[0]!.createdAt.getTime()).toBeGreaterThanOrEqual(startedAt);
      expect(stored[0]!.createdAt.getTime()).toBeLessThanOrEqual(endedAt);

      expect((await eventsAfter({}, ids[0], 100)).map((e) => e.id)).toEqual(ids.slice(1));
      expect((await eventsAfter({}, before, 2)).map((e) => e.id)).toEqual(ids.slice(0, 2));
      expect(await eventsAfter({}, ids[2], 100)).toEqual([]);
      expect((await eventsBefore({}, undefined, 2)).map((e) => e.id)).toEqual([ids[2], ids[1]]);
      expect((await eventsBefore({}, ids[1], 100)).map((e) => e.id)[0]).toBe(ids[0]);
    });

    it('filters by type (one or several), rollout, target and time', async () => {
      const before = await store.read.lastEventId();
      const startedAt = new Date();
      const [a, b, c, d] = await append([
        event(EventType.RolloutStateChanged, { rolloutId: 'r-f1', kind: 'NODE_AGENT' }),
        event(EventType.TargetStateChanged, { rolloutId: 'r-f1', kind: 'NODE_AGENT', namespace: 'kube-system', name: 'node-agent' }),
        event(EventType.TargetFailed, { rolloutId: 'r-f2', kind: 'NODE_AGENT', namespace: 'kube-system', name: 'node-agent' }),
        event(EventType.RolloutStateChanged, { rolloutId: 'r-f2', kind: 'VIRTUAL_CLUSTER' }),
      ]);
      const later = new Date(a!.createdAt.getTime() + 1);
      const idsAfter = (filter: Parameters<HistoryStore['read']['listEventsAfter']>[0]) =>
        eventsAfter(filter, before, 100).then((list) => list.map((e) => e.id));
      expect(await idsAfter({ types: [EventType.TargetFailed] })).toEqual([c!.id]);
      expect(await idsAfter({ types: [EventType.TargetFailed, EventType.RolloutStateChanged] })).toEqual([a!.id, c!.id, d!.id]);
      expect(await idsAfter({ rolloutId: 'r-f1' })).toEqual([a!.id, b!.id]);
      expect(await idsAfter({ kind: 'NODE_AGENT', namespace: 'kube-system', name: 'node-agent' })).toEqual([b!.id, c!.id]);
      expect(await idsAfter({ since: startedAt })).toEqual([a!.id, b!.id, c!.id, d!.id]);
      expect(await idsAfter({ since: a!.createdAt })).toEqual([a!.id, b!.id, c!.id, d!.id]);
      expect(await idsAfter({ since: later })).toEqual([]);
      expect(
        (await eventsBefore({ rolloutId: 'r-f2', types: [EventType.RolloutStateChanged, EventType.TargetFailed] }, undefined, 10)).map((e) => e.id),
      ).toEqual([d!.id, c!.id]);
    });

    it('reads a filter no index serves through a window of ids at a time; paging on finds every match once, in order', async () => {
      const before = await store.read.lastEventId();
      // More events than one window, with matches near the start, just past the first window and at the very end.
      const total = EVENT_SCAN_WINDOW + 2_500;
      const needles = new Set([3, EVENT_SCAN_WINDOW + 10, total - 1]);
      for (let from = 0; from < total; from += 2_500) {
        await append(
          Array.from({ length: Math.min(2_500, total - from) }, (_, j) =>
            event(EventType.TargetStateChanged, {
              rolloutId: `r-w${(from + j) % 7}`,
              kind: 'AGENT_POOL',
              namespace: 'ns-w',
              name: needles.has(from + j) ? 'needle' : `hay-${j % 50}`,
            }),
          ),
        );
      }
      const ids = [...needles].sort((a, b) => a - b).map((i) => before + 1 + i);
      const filter: EventFilter = { kind: 'AGENT_POOL', name: 'needle' };
      expect(servedByIndex(filter)).toBe(false);

      // Oldest first: the first read stops at the end of its window with the one match in it.
      const first = await store.read.listEventsAfter(filter, before, 10);
      expect(first).toEqual({
        events: [expect.objectContaining({ id: ids[0] })],
        scannedTo: before + EVENT_SCAN_WINDOW,
        more: true,
        scannedRows: EVENT_SCAN_WINDOW,
      });
      // A full page ends at its last event.
      expect(await store.read.listEventsAfter(filter, before, 1)).toMatchObject({ scannedTo: ids[0], more: true });
      const walk = async (read: (position: number | undefined) => Promise<EventPage>, from: number | undefined) => {
        const found: StoredEvent[] = [];
        let position = from;
        for (let reads = 0; ; reads++) {
          expect(reads).toBeLessThan(10);
          const page = await read(position);
          expect(page.scannedRows).toBeLessThanOrEqual(EVENT_SCAN_WINDOW);
          found.push(...page.events);
          position = page.scannedTo;
          if (!page.more) return found;
        }
      };
      expect((await walk((p) => store.read.listEventsAfter(filter, p, 2), before)).map((e) => e.id)).toEqual(ids);
      // Newest first, down to the first event of the store.
      expect((await walk((p) => store.read.listEventsBefore(filter, p, 2), undefined)).map((e) => e.id)).toEqual([...ids].reverse());
      // With types too (one window for all of them), and with since as the starting id.
      const typed: EventFilter = { types: [EventType.TargetStateChanged, EventType.TargetFailed], namespace: 'ns-w', name: 'needle' };
      expect(servedByIndex(typed)).toBe(false);
      expect((await walk((p) => store.read.listEventsAfter(typed, p, 100), before)).map((e) => e.id)).toEqual(ids);
      const all = await walk((p) => store.read.listEventsAfter({ name: 'needle', since: new Date(0) }, p, 100), undefined);
      expect(all.filter((e) => e.id > before).map((e) => e.id)).toEqual(ids);
      // What a read finds is what the filter matches: the same events as the filter applied to everything.
      const everything = await walk((p) => store.read.listEventsAfter({}, p, 5_000), before);
      expect(everything).toHaveLength(total);
      const matching = everything.filter((e) => matchesFilter(e, { namespace: 'ns-w', name: 'hay-7', rolloutId: 'r-w3' }));
      expect((await walk((p) => store.read.listEventsAfter({ namespace: 'ns-w', name: 'hay-7', rolloutId: 'r-w3' }, p, 7), before)).map((e) => e.id)).toEqual(
        matching.map((e) => e.id),
      );
    });

    it('keeps nothing of a transaction that fails', async () => {
      const before = await store.read.lastEventId();
      await expect(
        store.transactionWithEvents(function* (tx) {
          yield* tx.insertRollout(rolloutRow('r-rolled-back'), T0);
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      expect(await store.read.findRollout('r-rolled-back')).toBeUndefined();
      expect(await eventsAfter({}, before, 10)).toEqual([]);
    });

    it('keeps nothing of a transaction whose events cannot be stored, and the store goes on', async () => {
      const before = await store.read.lastEventId();
      await expect(
        store.transactionWithEvents(function* (tx) {
          yield* tx.insertRollout(rolloutRow('r-bad-event'), T0);
          // A type the Event table refuses (NOT NULL): the events fail after the body's writes (PostgreSQL: with its
          // COMMIT already sent, which then ends the failed transaction without keeping anything).
          return {
            result: undefined,
            events: [event(EventType.RolloutStateChanged, { rolloutId: 'r-bad-event' }), untypedEvent({ type: null as unknown as EventType })],
          };
        }),
      ).rejects.toThrow();
      expect(await store.read.findRollout('r-bad-event')).toBeUndefined();
      expect(await eventsAfter({}, before, 10)).toEqual([]);
      const [next] = await append([event(EventType.RolloutStateChanged, { rolloutId: 'r-after-bad-event' })]);
      expect(next!.id).toBeGreaterThan(before);
      expect((await eventsAfter({}, before, 10)).map((e) => e.rolloutId)).toEqual(['r-after-bad-event']);
    });
  });

  describe('idempotency keys', () => {
    it('make one rollout however many writers race on one key, in one process and across two', async () => {
      const second = await another();
      const attempts = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? store : second).transaction((tx) => createOnce(tx, 'key-race', `r-race-${i}`)));
      const results = await Promise.all(attempts);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.row.id)).size).toBe(1);
      expect(await store.read.countRollouts({ search: 'r-race-' })).toBe(1);
    });

    it('keep the record of the request that won a race, whatever the others sent, across two stores', async () => {
      const second = await another();
      // Two different requests under one key, interleaved on two stores (two replicas): one rollout, one record, and
      // the record names the request that made that rollout (so the loser's request is told apart by its hash).
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (i % 2 === 0 ? store : second).transaction((tx) => createWithRecord(tx, 'key-rec', `r-rec-${i}`, `hash-${i % 4}`)),
        ),
      );
      const winners = results.map((r, i) => ({ ...r, i })).filter((r) => r.created);
      expect(winners).toHaveLength(1);
      const record = await second.read.findIdempotencyRecord({ scope: SCOPE, key: 'key-rec' });
      expect(record).toMatchObject({
        scope: SCOPE,
        key: 'key-rec',
        operation: 'AGENT_POOL',
        rolloutId: winners[0]!.row.id,
        requestHash: `hash-${winners[0]!.i % 4}`,
      });
      expect(record!.createdAt.toISOString()).toBe(T0.toISOString());
      expect(await store.read.countRollouts({ search: 'r-rec-' })).toBe(1);
      // A second record for a key is ignored: the first stays.
      await store.transaction((tx) =>
        tx.insertIdempotencyRecord({ scope: SCOPE, key: 'key-rec', operation: 'AGENT_POOL', requestHash: 'other', rolloutId: 'r-other' }, at(1)),
      );
      expect(await store.read.findIdempotencyRecord({ scope: SCOPE, key: 'key-rec' })).toEqual(record);
      expect(await store.read.findIdempotencyRecord({ scope: SCOPE, key: 'key-never' })).toBeUndefined();
      expect(await store.read.findIdempotencyRecord({ scope: 'token:other', key: 'key-rec' })).toBeUndefined();
    });

    it('keep one key apart per scope: the same key of two callers makes two rollouts, each found only in its scope', async () => {
      const mine = await store.transaction((tx) => createWithRecord(tx, 'key-scoped', 'r-scoped-mine', 'hash-a', 'token:mine'));
      const theirs = await store.transaction((tx) => createWithRecord(tx, 'key-scoped', 'r-scoped-theirs', 'hash-b', 'token:theirs'));
      const mineAgain = await store.transaction((tx) => createWithRecord(tx, 'key-scoped', 'r-scoped-again', 'hash-a', 'token:mine'));
      expect([mine.created, theirs.created, mineAgain.created]).toEqual([true, true, false]);
      expect(mineAgain.row.id).toBe('r-scoped-mine');
      expect((await store.read.findRolloutByIdempotencyKey({ scope: 'token:theirs', key: 'key-scoped' }))?.id).toBe('r-scoped-theirs');
      expect(await store.read.findRolloutByIdempotencyKey({ scope: '', key: 'key-scoped' })).toBeUndefined();
      expect(await store.read.findIdempotencyRecord({ scope: 'token:theirs', key: 'key-scoped' })).toMatchObject({ requestHash: 'hash-b' });
    });

    it('leave an unkeyed rollout free to be created many times', async () => {
      const [x, y] = await Promise.all([
        store.transaction((tx) => tx.insertRollout(rolloutRow('r-nokey-1'), T0)),
        store.transaction((tx) => tx.insertRollout(rolloutRow('r-nokey-2'), T0)),
      ]);
      expect(x?.id).toBe('r-nokey-1');
      expect(y?.id).toBe('r-nokey-2');
    });
  });

  describe('rollouts and targets', () => {
    it('stores a rollout with its targets and changes their states', async () => {
      const row = await store.transaction(function* (tx) {
        const inserted = (yield* tx.insertRollout(rolloutRow('r-life', { idempotencyKey: 'key-life', causeMessage: '100% done_now' }), T0))!;
        yield* tx.insertTargets(
          [
            {
              id: 'r-life.0',
              rolloutId: 'r-life',
              kind: 'AGENT_POOL',
              namespace: 'a',
              name: 'pool-0',
              ordinal: 0,
              state: 'PENDING',
              fromVersion: 'v1',
              toVersion: 'v2',
              skipReason: null,
              finishedAt: null,
            },
            {
              id: 'r-life.1',
              rolloutId: 'r-life',
              kind: 'AGENT_POOL',
              namespace: 'a',
              name: 'pool-1',
              ordinal: 1,
              state: 'SKIPPED',
              fromVersion: null,
              toVersion: 'v2',
              skipReason: 'already v2',
              finishedAt: T0,
            },
            {
              id: 'r-life.2',
              rolloutId: 'r-life',
              kind: 'AGENT_POOL',
              namespace: 'b',
              name: 'pool-2',
              ordinal: 2,
              state: 'PENDING',
              fromVersion: 'v1',
              toVersion: 'v2',
              skipReason: null,
              finishedAt: null,
            },
          ],
          T0,
        );
        return inserted;
      });
      expect(row).toMatchObject({
        id: 'r-life',
        state: 'PENDING',
        engineState: '{}',
        message: null,
        startedAt: null,
        finishedAt: null,
        idempotencyKey: 'key-life',
      });
      expect(row.createdAt.toISOString()).toBe(T0.toISOString());
      expect(await store.read.findRollout('r-life')).toEqual(row);
      expect(await store.read.findRolloutByIdempotencyKey({ scope: '', key: 'key-life' })).toEqual(row);

      const targets = await store.read.targetsOf('r-life');
      expect(targets.map((t) => [t.name, t.state, t.attempts, t.error])).toEqual([
        ['pool-0', 'PENDING', 0, null],
        ['pool-1', 'SKIPPED', 0, null],
        ['pool-2', 'PENDING', 0, null],
      ]);
      expect(targets[1]!.finishedAt?.toISOString()).toBe(T0.toISOString());
      expect((await store.read.targetsInState('r-life', 'PENDING')).map((t) => t.name)).toEqual(['pool-0', 'pool-2']);
      expect((await store.read.findTarget('r-life', 'b', 'pool-2'))?.id).toBe('r-life.2');
      expect(await store.read.findTarget('r-life', 'a', 'pool-2')).toBeUndefined();

      const progressing = await store.transaction(function* (tx) {
        const locked = (yield* tx.lockRollout('r-life'))!;
        expect(locked.state).toBe('PENDING');
        return yield* tx.updateRolloutState('r-life', { state: 'PROGRESSING', message: null, startedAt: at(1) }, at(1));
      });
      expect(progressing).toMatchObject({ state: 'PROGRESSING', message: null });
      expect(progressing.startedAt?.toISOString()).toBe(at(1).toISOString());
      const paused = await store.transaction((tx) => tx.updateRolloutState('r-life', { state: 'PAUSED', message: 'by hand' }, at(2)));
      expect(paused.startedAt?.toISOString()).toBe(at(1).toISOString()); // left as it was
      expect(paused.updatedAt.toISOString()).toBe(at(2).toISOString());

      await store.transaction(function* (tx) {
        const failed = yield* tx.updateTarget('r-life.0', { state: 'PROGRESSING', error: 'pull failed', countAttempt: true, admittedAt: at(3) }, at(3));
        expect(failed).toMatchObject({ state: 'PROGRESSING', error: 'pull failed', attempts: 1 });
        const again = yield* tx.updateTarget('r-life.0', { state: 'PROGRESSING', countAttempt: true }, at(4));
        expect(again).toMatchObject({ error: 'pull failed', attempts: 2 }); // error undefined: kept
        expect(again.admittedAt?.toISOString()).toBe(at(3).toISOString());
        // Why targets in flight wait: only those still PROGRESSING, in the cluster (and with the name) given.
        expect(yield* tx.noteWaiting('r-life', 'local', undefined, 'waiting: refused', at(4))).toBe(1);
        expect(yield* tx.noteWaiting('r-life', 'edge-9', undefined, 'elsewhere', at(4))).toBe(0);
        expect(yield* tx.noteWaiting('r-life', 'local', { namespace: 'zz', name: 'pool-0' }, 'not that one', at(4))).toBe(0);
        expect((yield* tx.findTarget('r-life', again.namespace, 'pool-0'))?.error).toBe('waiting: refused');
        expect((yield* tx.findTarget('r-life', 'b', 'pool-2'))?.error).toBeNull(); // PENDING: untouched
        expect(yield* tx.noteWaiting('r-life', 'local', { namespace: again.namespace, name: 'pool-0' }, null, at(4))).toBe(1);
        expect((yield* tx.findTarget('r-life', again.namespace, 'pool-0'))?.error).toBeNull();
        const cleared = yield* tx.updateTarget('r-life.0', { state: 'SUCCEEDED', error: null, finishedAt: at(5) }, at(5));
        expect(cleared).toMatchObject({ state: 'SUCCEEDED', error: null, attempts: 2 });
        // A note that comes after the outcome changes nothing.
        expect(yield* tx.noteWaiting('r-life', 'local', undefined, 'too late', at(5))).toBe(0);
        yield* tx.updateEngineState('r-life', '{"canaryReleased":true}', at(5));
      });
      expect((await store.read.findRollout('r-life'))!.engineState).toBe('{"canaryReleased":true}');

      const cancelled = await store.transaction(function* (tx) {
        yield* tx.updateRolloutState('r-life', { state: 'ABORTED', message: 'stop', finishedAt: at(6) }, at(6));
        return yield* tx.cancelPendingTargets('r-life', at(6));
      });
      expect(cancelled.map((t) => [t.name, t.state])).toEqual([['pool-2', 'PENDING']]);
      expect(Object.fromEntries(await store.read.targetStateCounts('r-life'))).toEqual({ SUCCEEDED: 1, SKIPPED: 1, CANCELLED: 1 });
      const ofSeveral = await store.read.targetStateCountsOf(['r-life', 'r-none']);
      expect([...ofSeveral.keys()]).toEqual(['r-life']);
      expect(Object.fromEntries(ofSeveral.get('r-life')!)).toEqual({ SUCCEEDED: 1, SKIPPED: 1, CANCELLED: 1 });
      expect((await store.read.targetStateCountsOf([])).size).toBe(0);
      expect(await store.transaction((tx) => tx.cancelPendingTargets('r-life', at(7)))).toEqual([]);

      expect((await store.read.targetPage('r-life', undefined, 0, 10)).map((t) => t.ordinal)).toEqual([1, 2]);
      expect((await store.read.targetPage('r-life', 'CANCELLED', undefined, 10)).map((t) => t.ordinal)).toEqual([2]);
      expect(await store.read.countTargets('r-life', undefined)).toBe(3);
      expect(await store.read.countTargets('r-life', 'SKIPPED')).toBe(1);
      // A page and the count of everything it pages through, in one read: with and without a state, past the end,
      // and for a rollout that does not exist.
      const ordinals = async (state: string | undefined, after: number | undefined, limit: number) => {
        const { rows, totalCount } = await store.read.targetPageWithCount('r-life', state, after, limit);
        return { ordinals: rows.map((t) => t.ordinal), totalCount };
      };
      expect(await ordinals(undefined, undefined, 2)).toEqual({ ordinals: [0, 1], totalCount: 3 });
      expect(await ordinals(undefined, 0, 10)).toEqual({ ordinals: [1, 2], totalCount: 3 });
      expect(await ordinals('CANCELLED', undefined, 10)).toEqual({ ordinals: [2], totalCount: 1 });
      expect(await ordinals(undefined, 2, 10)).toEqual({ ordinals: [], totalCount: 3 });
      expect(await ordinals('FAILED', undefined, 10)).toEqual({ ordinals: [], totalCount: 0 });
      const paged = await store.read.targetPageWithCount('r-life', undefined, undefined, 10);
      expect(paged.rows).toEqual(await store.read.targetPage('r-life', undefined, undefined, 10));
      expect(await store.read.targetPageWithCount('r-none', undefined, undefined, 10)).toEqual({ rows: [], totalCount: 0 });
      // In some clusters only (a staged run's wave): the same page when they hold every target, none in others.
      expect(await store.read.targetPageWithCount('r-life', undefined, undefined, 10, { clusters: ['local', 'edge-1'] })).toEqual(paged);
      expect(await store.read.targetPageWithCount('r-life', undefined, 0, 1, { clusters: ['local'] })).toEqual({ rows: [paged.rows[1]], totalCount: 3 });
      expect((await store.read.targetPageWithCount('r-life', 'CANCELLED', undefined, 10, { clusters: ['local'] })).totalCount).toBe(1);
      expect(await store.read.targetPageWithCount('r-life', undefined, undefined, 10, { clusters: ['edge-1'] })).toEqual({ rows: [], totalCount: 0 });
      // Changed to or from one version (issue 30: targets by version), alone or with the other filters.
      expect(await store.read.targetPageWithCount('r-life', undefined, undefined, 10, { version: 'v2' })).toEqual(paged);
      // pool-1 was skipped without a version it came from.
      expect(await store.read.targetPageWithCount('r-life', undefined, undefined, 10, { version: 'v1' })).toEqual({
        rows: [paged.rows[0], paged.rows[2]],
        totalCount: 2,
      });
      expect(await store.read.targetPageWithCount('r-life', undefined, undefined, 10, { version: 'v3' })).toEqual({ rows: [], totalCount: 0 });
      expect(await store.read.targetPageWithCount('r-life', 'CANCELLED', undefined, 10, { version: 'v2', clusters: ['local'] })).toEqual({
        rows: [paged.rows[2]],
        totalCount: 1,
      });
      expect((await store.read.targetPageWithCount('r-life', undefined, undefined, 10, { version: 'v2', clusters: ['edge-1'] })).totalCount).toBe(0);
    });

    it('changes several targets of one rollout in one batch, answering in the order given, and refuses a target named twice', async () => {
      const target = (ordinal: number, state: string) => targetRow('r-batch', ordinal, state);
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-batch'), T0);
        // A target of the same name in another rollout must not be touched.
        yield* tx.insertRollout(rolloutRow('r-batch-other'), T0);
        yield* tx.insertTargets([target(0, 'PENDING'), target(1, 'PENDING'), target(2, 'PROGRESSING')], T0);
        yield* tx.insertTargets([{ ...target(0, 'PENDING'), id: 'r-batch-other.0', rolloutId: 'r-batch-other' }], T0);
      });
      await store.transaction((tx) => tx.updateTarget('r-batch.2', { state: 'PROGRESSING', error: 'slow pull' }, at(1)));

      const updated = await store.transaction((tx) =>
        tx.updateTargets(
          'r-batch',
          [
            { namespace: 'ns', name: 'pool-2', state: 'FAILED', finishedAt: at(3) }, // error undefined: kept
            { namespace: 'ns', name: 'pool-9', state: 'PROGRESSING' }, // no such target
            { namespace: 'ns', name: 'pool-0', state: 'PROGRESSING', countAttempt: true, admittedAt: at(2) },
            { namespace: 'ns', name: 'pool-1', state: 'PROGRESSING', error: 'retrying', countAttempt: true, admittedAt: at(2) },
          ],
          at(4),
        ),
      );
      expect(updated.map((u) => u && [u.target.name, u.previousState, u.target.state, u.target.attempts, u.target.error])).toEqual([
        ['pool-2', 'PROGRESSING', 'FAILED', 0, 'slow pull'],
        undefined,
        ['pool-0', 'PENDING', 'PROGRESSING', 1, null],
        ['pool-1', 'PENDING', 'PROGRESSING', 1, 'retrying'],
      ]);
      expect(updated[0]!.target.finishedAt?.toISOString()).toBe(at(3).toISOString());
      expect(updated[0]!.target.admittedAt).toBeNull();
      expect(updated[2]!.target.admittedAt?.toISOString()).toBe(at(2).toISOString());
      expect(updated[2]!.target.updatedAt.toISOString()).toBe(at(4).toISOString());
      // What the batch answered is what was committed.
      expect(await store.read.findTarget('r-batch', 'ns', 'pool-0')).toEqual(updated[2]!.target);
      expect((await store.read.findTarget('r-batch-other', 'ns', 'pool-0'))?.state).toBe('PENDING');

      // Dates and error cleared where given, kept where not; attempts add up.
      const again = await store.transaction((tx) =>
        tx.updateTargets('r-batch', [{ namespace: 'ns', name: 'pool-1', state: 'SUCCEEDED', error: null, countAttempt: true, finishedAt: at(5) }], at(5)),
      );
      expect(again[0]).toMatchObject({ previousState: 'PROGRESSING', target: { state: 'SUCCEEDED', error: null, attempts: 2 } });
      expect(again[0]!.target.admittedAt?.toISOString()).toBe(at(2).toISOString());
      expect(await store.transaction((tx) => tx.updateTargets('r-batch', [], at(6)))).toEqual([]);

      // One target twice in a batch cannot be applied in order by one statement: refused, nothing changed.
      await expect(
        store.transaction((tx) =>
          tx.updateTargets(
            'r-batch',
            [
              { namespace: 'ns', name: 'pool-0', state: 'SUCCEEDED' },
              { namespace: 'ns', name: 'pool-0', state: 'FAILED' },
            ],
            at(7),
          ),
        ),
      ).rejects.toThrow(/twice/);
      expect((await store.read.findTarget('r-batch', 'ns', 'pool-0'))?.state).toBe('PROGRESSING');
    });

    it('keeps who started a rollout, and null for one that does not say, on every read of it', async () => {
      const inserted = await store.transaction(function* (tx) {
        const started = yield* tx.insertRollout(
          rolloutRow('r-started', { idempotencyKey: 'key-started', idempotencyScope: 'token:tok_a', startedBy: 'tok_a' }),
          T0,
        );
        const unsaid = yield* tx.insertRollout(rolloutRow('r-unsaid'), at(1));
        return [started?.startedBy, unsaid?.startedBy, (yield* tx.lockRollout('r-started'))?.startedBy];
      });
      expect(inserted).toEqual(['tok_a', null, 'tok_a']);
      expect((await store.read.findRollout('r-started'))?.startedBy).toBe('tok_a');
      expect((await store.read.findRolloutByIdempotencyKey({ scope: 'token:tok_a', key: 'key-started' }))?.startedBy).toBe('tok_a');
      expect((await store.read.findRollout('r-unsaid'))?.startedBy).toBeNull();
      const listed = await store.read.listRollouts({}, undefined, 500);
      expect(listed.filter((r) => r.id === 'r-started' || r.id === 'r-unsaid').map((r) => [r.id, r.startedBy])).toEqual([
        ['r-unsaid', null],
        ['r-started', 'tok_a'],
      ]);
    });

    it('lists rollouts newest first, page by page, and searches their text literally', async () => {
      await store.transaction(function* (tx) {
        for (let i = 0; i < 5; i++)
          yield* tx.insertRollout(
            rolloutRow(`r-list-${i}`, { kind: i % 2 ? 'NODE_AGENT' : 'VIRTUAL_CLUSTER', causeMessage: i === 3 ? 'Fix 50%_OFF' : 'routine' }),
            at(100 + i),
          );
      });
      const page1 = await store.read.listRollouts({ kind: 'VIRTUAL_CLUSTER' }, undefined, 2);
      expect(page1.map((r) => r.id)).toEqual(['r-list-4', 'r-list-2']);
      const last = page1[1]!;
      const page2 = await store.read.listRollouts({ kind: 'VIRTUAL_CLUSTER' }, { createdAt: last.createdAt, id: last.id }, 2);
      expect(page2.map((r) => r.id)).toEqual(['r-list-0']);
      expect(await store.read.countRollouts({ kind: 'VIRTUAL_CLUSTER' })).toBe(3);
      expect((await store.read.listRollouts({ search: '50%_off' }, undefined, 10)).map((r) => r.id)).toEqual(['r-list-3']);
      expect(await store.read.countRollouts({ search: '5_%' })).toBe(0);
      expect((await store.read.listRollouts({ states: ['PENDING'], createdAfter: at(103), createdBefore: at(104) }, undefined, 10)).map((r) => r.id)).toEqual([
        'r-list-3',
      ]);
    });

    it('lists a page of rollouts with its target counts by state in one read, as listRollouts and targetStateCountsOf do', async () => {
      await store.transaction(function* (tx) {
        for (let i = 0; i < 4; i++) yield* tx.insertRollout(rolloutRow(`r-counted-${i}`, { kind: 'NODE_AGENT' }), at(200 + i));
        yield* tx.insertTargets(
          [targetRow('r-counted-1', 0, 'SUCCEEDED'), targetRow('r-counted-1', 1, 'SUCCEEDED'), targetRow('r-counted-1', 2, 'FAILED')],
          T0,
        );
        yield* tx.insertTargets([targetRow('r-counted-3', 0, 'PENDING')], T0);
      });
      for (const [before, limit] of [
        [undefined, 10],
        [undefined, 2],
        [{ createdAt: at(202), id: 'r-counted-2' }, 10],
      ] as const) {
        const filter = { kind: 'NODE_AGENT' as const, createdAfter: at(200) };
        const { rows, counts } = await store.read.listRolloutsWithCounts(filter, before, limit);
        const listed = await store.read.listRollouts(filter, before, limit);
        expect(rows).toEqual(listed);
        expect(counts).toEqual(await store.read.targetStateCountsOf(listed.map((r) => r.id)));
      }
      const { rows, counts } = await store.read.listRolloutsWithCounts({ kind: 'NODE_AGENT', createdAfter: at(200) }, undefined, 10);
      expect(rows.map((r) => r.id)).toEqual(['r-counted-3', 'r-counted-2', 'r-counted-1', 'r-counted-0']);
      expect(counts.get('r-counted-1')).toEqual(
        new Map([
          ['SUCCEEDED', 2],
          ['FAILED', 1],
        ]),
      );
      expect(counts.get('r-counted-3')).toEqual(new Map([['PENDING', 1]]));
      expect(counts.has('r-counted-0')).toBe(false); // no targets: absent, as targetStateCountsOf answers
      expect(await store.read.listRolloutsWithCounts({ kind: 'NODE_AGENT', createdAfter: at(900) }, undefined, 10)).toEqual({ rows: [], counts: new Map() });
    });
  });

  describe('what the engine and the launcher look for', () => {
    it('lists rollouts needing the engine and targets covered by active rollouts', async () => {
      const target = (rolloutId: string, ordinal: number, state: string) => targetRow(rolloutId, ordinal, state, 'NODE_AGENT', '', 'node');
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-eng-active', { kind: 'NODE_AGENT' }), at(200));
        yield* tx.insertTargets(
          [target('r-eng-active', 0, 'PENDING'), target('r-eng-active', 1, 'SUCCEEDED'), target('r-eng-active', 2, 'PROGRESSING')],
          at(200),
        );
        yield* tx.insertRollout(rolloutRow('r-eng-done', { kind: 'NODE_AGENT' }), at(201));
        yield* tx.insertTargets([target('r-eng-done', 3, 'PENDING')], at(201));
        yield* tx.updateRolloutState('r-eng-done', { state: 'SUCCEEDED', message: null, finishedAt: at(202) }, at(202));
        yield* tx.updateEngineState('r-eng-done', '{"finished":true}', at(202));
        yield* tx.insertRollout(rolloutRow('r-eng-ending', { kind: 'NODE_AGENT' }), at(203));
        yield* tx.updateRolloutState('r-eng-ending', { state: 'ABORTED', message: null, finishedAt: at(204) }, at(204));
      });
      const needing = await store.read.rolloutIdsNeedingEngine();
      expect(needing.filter((id) => id.startsWith('r-eng-'))).toEqual(['r-eng-active', 'r-eng-ending']);
      const covered = await store.read.coveredTargets('NODE_AGENT', ['PENDING', 'PROGRESSING'], ['PENDING', 'PROGRESSING', 'PAUSED']);
      expect(covered.map((c) => `${c.rolloutId}/${c.name}`).sort()).toEqual(['r-eng-active/node-0', 'r-eng-active/node-2']);
      expect(await store.read.coveredTargets('AGENT_POOL', ['PENDING'], ['NO_SUCH_STATE'])).toEqual([]);
    });
  });

  describe('staged runs (issue 30)', () => {
    it("keeps a run, its waves in order, its gates once each, their decisions, and the waves' states", async () => {
      const wave = (ordinal: number, name: string, clusters: string[]) => ({
        rolloutId: 'r-run',
        ordinal,
        name,
        clusters: JSON.stringify(clusters),
        maxConcurrency: 1,
        maxFailures: 0,
        minSuccessMs: ordinal * 1000,
        progressDeadlineSeconds: ordinal === 0 ? 120 : null,
        mandatory: ordinal === 0,
        remainder: ordinal === 1,
        beforeGate: ordinal === 0 ? '{"type":"APPROVAL","config":{}}' : null,
        afterGate: null,
        state: 'PENDING',
        reason: null,
        startedAt: null,
        finishedAt: null,
      });
      const gate = {
        id: 'r-run:before:a',
        rolloutId: 'r-run',
        key: 'before:a',
        type: 'APPROVAL',
        config: '{}',
        state: 'WAITING',
        reason: 'w',
        openedAt: at(301),
        endedAt: null,
      };
      const opened: boolean[] = [];
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-run'), at(300));
        yield* tx.insertRun(
          {
            rolloutId: 'r-run',
            strategy: '{"waves":[]}',
            excluded: '["x"]',
            failurePolicy: 'PAUSE',
            unreachable: 'SKIP',
            startedBy: 'tok',
            createdAt: at(300),
          },
          [wave(1, 'remainder', ['c']), wave(0, 'a', ['b', 'a'])],
        );
        opened.push(yield* tx.insertGate(gate));
        opened.push(yield* tx.insertGate({ ...gate, reason: 'second' }));
        yield* tx.insertGateDecision({ gateId: gate.id, tokenId: 'tok-2', role: 'deployer', decision: 'APPROVE', comment: 'ok', at: at(302) });
        yield* tx.insertGateDecision({ gateId: gate.id, tokenId: 'tok-3', role: 'admin', decision: 'REJECT', comment: null, at: at(303) });
        yield* tx.updateGate(gate.id, 'FAILED', 'rejected', at(303));
        yield* tx.updateWave('r-run', 0, 'RUNNING', null, at(301), null);
        yield* tx.updateWave('r-run', 0, 'FAILED', 'gate', null, at(304));
      });
      expect(opened).toEqual([true, false]);
      const run = await store.read.runOf('r-run');
      expect(run?.run).toEqual({
        rolloutId: 'r-run',
        strategy: '{"waves":[]}',
        excluded: '["x"]',
        failurePolicy: 'PAUSE',
        unreachable: 'SKIP',
        startedBy: 'tok',
        createdAt: at(300),
      });
      expect(run?.waves).toEqual([
        { ...wave(0, 'a', ['b', 'a']), state: 'FAILED', reason: 'gate', startedAt: at(301), finishedAt: at(304) },
        wave(1, 'remainder', ['c']),
      ]);
      expect(await store.read.gatesOf('r-run')).toEqual([{ ...gate, state: 'FAILED', reason: 'rejected', endedAt: at(303) }]);
      const decisions = await store.read.gateDecisions(gate.id);
      expect(decisions.map(({ id: _, ...d }) => d)).toEqual([
        { gateId: gate.id, tokenId: 'tok-2', role: 'deployer', decision: 'APPROVE', comment: 'ok', at: at(302) },
        { gateId: gate.id, tokenId: 'tok-3', role: 'admin', decision: 'REJECT', comment: null, at: at(303) },
      ]);
      expect(await store.read.runOf('r-none')).toBeUndefined();

      // A gate's attempts (external checks, alert looks): each number kept once, read back in order.
      const attempt = (seq: number, answer: string, afterMs: number | null) => ({
        gateId: gate.id,
        seq,
        startedAt: at(310 + seq),
        at: at(311 + seq),
        answer,
        afterMs,
        reason: `answer ${seq}`,
      });
      const kept = await store.transaction(function* (tx) {
        return [
          yield* tx.insertGateAttempt(attempt(1, 'WAIT', 30_000)),
          yield* tx.insertGateAttempt(attempt(0, 'FAILURE', null)),
          yield* tx.insertGateAttempt({ ...attempt(1, 'PROCEED', null), reason: 'a second answer to attempt 1' }),
        ];
      });
      expect(kept).toEqual([true, true, false]);
      expect(await store.read.gateAttempts(gate.id)).toEqual([attempt(0, 'FAILURE', null), attempt(1, 'WAIT', 30_000)]);
      expect(await store.read.gateAttempts('no-gate')).toEqual([]);

      // A look that answered as the latest attempt did moves that row's `at` on, forward only; never an older row.
      const extended = await store.transaction(function* (tx) {
        return [
          yield* tx.extendGateAttempt(gate.id, 1, at(400)),
          yield* tx.extendGateAttempt(gate.id, 1, at(390)),
          yield* tx.extendGateAttempt(gate.id, 0, at(401)),
          yield* tx.extendGateAttempt(gate.id, 7, at(402)),
        ];
      });
      expect(extended).toEqual([true, false, false, false]);
      expect(await store.read.gateAttempts(gate.id)).toEqual([attempt(0, 'FAILURE', null), { ...attempt(1, 'WAIT', 30_000), at: at(400) }]);
    });
  });

  describe('launch lock', () => {
    it('serializes read-then-write launches of one kind, in one process and across two', async () => {
      const second = await another();
      // Each writer creates its rollout only when none of the kind exists: what a launch's overlap check does. Without
      // the lock, PostgreSQL's READ COMMITTED lets several writers read "none" and all insert.
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 === 0 ? store : second).transaction(function* (tx) {
            yield* tx.lockLaunches('AGENT_POOL');
            if ((yield* tx.countRollouts({ search: 'r-launch-' })) > 0) return false;
            return (yield* tx.insertRollout(rolloutRow(`r-launch-${i}`), T0)) !== undefined;
          }),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await store.read.countRollouts({ search: 'r-launch-' })).toBe(1);
    });
  });

  describe('revisions and in-flight work', () => {
    it('gives the latest revision of a target', async () => {
      expect(await store.read.latestRevision('AGENT_POOL', 'rev', 'p')).toBeUndefined();
      await store.transaction(function* (tx) {
        yield* tx.insertRevision({ kind: 'AGENT_POOL', namespace: 'rev', name: 'p', n: 1, version: 'v1', rolloutId: null }, T0);
        yield* tx.insertRevision({ kind: 'AGENT_POOL', namespace: 'rev', name: 'p', n: 2, version: 'v2', rolloutId: 'r-life' }, T0);
      });
      expect(await store.read.latestRevision('AGENT_POOL', 'rev', 'p')).toEqual({ n: 2, version: 'v2' });
      expect(await store.read.revisionPage('AGENT_POOL', 'rev', 'p', undefined, 10)).toEqual([
        { n: 2, version: 'v2', rolloutId: 'r-life', appliedAt: T0 },
        { n: 1, version: 'v1', rolloutId: null, appliedAt: T0 },
      ]);
      expect((await store.read.revisionPage('AGENT_POOL', 'rev', 'p', 2, 10)).map((r) => r.n)).toEqual([1]);
      expect(await store.read.revisionPage('AGENT_POOL', 'rev', 'other', undefined, 10)).toEqual([]);
    });

    it('gives the latest revisions of several targets in one read and inserts several revisions at once', async () => {
      const key = (name: string) => ({ kind: 'AGENT_POOL', namespace: 'revs', name });
      expect(await store.read.latestRevisions([])).toEqual([]);
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-revs'), T0);
        yield* tx.insertRevisions([
          { ...key('a'), n: 1, version: 'v1', rolloutId: null, appliedAt: at(1) },
          { ...key('a'), n: 2, version: 'v2', rolloutId: 'r-revs', appliedAt: at(2) },
          { ...key('b'), n: 1, version: 'v7', rolloutId: 'r-revs', appliedAt: at(3) },
        ]);
      });
      // In the order asked, undefined where a target has none; the same key twice is answered twice.
      expect(await store.read.latestRevisions([key('b'), key('none'), key('a'), { ...key('a'), kind: 'NODE_AGENT' }, key('b')])).toEqual([
        { n: 1, version: 'v7' },
        undefined,
        { n: 2, version: 'v2' },
        undefined,
        { n: 1, version: 'v7' },
      ]);
      expect(await store.read.revisionPage('AGENT_POOL', 'revs', 'a', undefined, 10)).toEqual([
        { n: 2, version: 'v2', rolloutId: 'r-revs', appliedAt: at(2) },
        { n: 1, version: 'v1', rolloutId: null, appliedAt: at(1) },
      ]);
      // Inside a transaction the read sees the transaction's own inserts.
      const seen = await store.transaction(function* (tx) {
        yield* tx.insertRevisions([{ ...key('c'), n: 1, version: 'v1', rolloutId: null, appliedAt: at(4) }]);
        return yield* tx.latestRevisions([key('c')]);
      });
      expect(seen).toEqual([{ n: 1, version: 'v1' }]);
      // A duplicate revision number fails the whole insert.
      await expect(
        store.transaction((tx) =>
          tx.insertRevisions([
            { ...key('d'), n: 1, version: 'v1', rolloutId: null, appliedAt: at(5) },
            { ...key('b'), n: 1, version: 'v8', rolloutId: null, appliedAt: at(5) },
          ]),
        ),
      ).rejects.toThrow();
      expect(await store.read.latestRevisions([key('d')])).toEqual([undefined]);
    });

    it('puts, replaces and deletes one row per target', async () => {
      await store.transaction((tx) => tx.putInFlight({ kind: 'AGENT_POOL', namespace: 'x', name: 'p', payload: '{"step":1}' }, T0));
      await store.transaction((tx) => tx.putInFlight({ kind: 'AGENT_POOL', namespace: 'x', name: 'p', payload: '{"step":2}' }, at(1)));
      const rows = await store.read.allInFlight();
      expect(rows).toEqual([{ cluster: 'local', kind: 'AGENT_POOL', namespace: 'x', name: 'p', payload: '{"step":2}', createdAt: at(1) }]);
      await store.transaction((tx) => tx.deleteInFlight('AGENT_POOL', 'x', 'p'));
      expect(await store.read.allInFlight()).toEqual([]);
    });

    it('says how many rows a delete removed', async () => {
      await store.transaction((tx) => tx.putInFlight({ kind: 'AGENT_POOL', namespace: 'x', name: 'p', payload: '{"step":2}' }, T0));
      expect(await store.transaction((tx) => tx.deleteInFlight('AGENT_POOL', 'x', 'p'))).toBe(1);
      expect(await store.transaction((tx) => tx.deleteInFlight('AGENT_POOL', 'x', 'p'))).toBe(0);
      expect(await store.read.allInFlight()).toEqual([]);
    });
  });

  // ADR 0054: every record carries its member cluster; a call that names none means `local`.
  describe('the cluster key', () => {
    const inCluster = (rolloutId: string, ordinal: number, cluster: string | undefined): NewTargetRow => ({
      ...targetRow(rolloutId, 0, 'PENDING', 'AGENT_POOL', 'ns', 'same'),
      id: `${rolloutId}.${ordinal}`,
      ordinal,
      ...(cluster === undefined ? {} : { cluster }),
    });

    it('keeps one target of a name per cluster in a rollout, found, updated and covered per cluster', async () => {
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-cl'), T0);
        yield* tx.insertTargets([inCluster('r-cl', 0, undefined), inCluster('r-cl', 1, 'edge-1'), inCluster('r-cl', 2, 'edge-2')], T0);
      });
      // The same namespace and name twice in one cluster is refused by the unique key.
      await expect(store.transaction((tx) => tx.insertTargets([inCluster('r-cl', 3, 'edge-1')], T0))).rejects.toThrow();
      expect((await store.read.targetsOf('r-cl')).map((t) => t.cluster)).toEqual(['local', 'edge-1', 'edge-2']);
      expect((await store.read.findTarget('r-cl', 'ns', 'same-0'))?.id).toBe('r-cl.0');
      expect((await store.read.findTarget('r-cl', 'ns', 'same-0', 'edge-2'))?.id).toBe('r-cl.2');
      expect(await store.read.findTarget('r-cl', 'ns', 'same-0', 'edge-9')).toBeUndefined();
      const updated = await store.transaction((tx) =>
        tx.updateTargets(
          'r-cl',
          [
            { cluster: 'edge-1', namespace: 'ns', name: 'same-0', state: 'PROGRESSING', admittedAt: at(1) },
            { namespace: 'ns', name: 'same-0', state: 'FAILED' },
          ],
          at(1),
        ),
      );
      expect(updated.map((u) => [u?.target.id, u?.previousState, u?.target.state])).toEqual([
        ['r-cl.1', 'PENDING', 'PROGRESSING'],
        ['r-cl.0', 'PENDING', 'FAILED'],
      ]);
      // One target of each cluster may appear in one batch; one target twice may not.
      await expect(
        store.transaction((tx) =>
          tx.updateTargets(
            'r-cl',
            [
              { cluster: 'edge-2', namespace: 'ns', name: 'same-0', state: 'FAILED' },
              { cluster: 'edge-2', namespace: 'ns', name: 'same-0', state: 'FAILED' },
            ],
            at(2),
          ),
        ),
      ).rejects.toThrow(/edge-2:ns\/same-0/);
      const covered = await store.read.coveredTargets('AGENT_POOL', ['PENDING', 'PROGRESSING'], ['PENDING']);
      expect(
        covered
          .filter((c) => c.rolloutId === 'r-cl')
          .map((c) => `${c.cluster}:${c.name}`)
          .sort(),
      ).toEqual(['edge-1:same-0', 'edge-2:same-0']);
    });

    it('says which active rollouts have a target in a cluster', async () => {
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-act-1'), at(300));
        yield* tx.insertTargets([inCluster('r-act-1', 0, 'edge-act')], at(300));
        yield* tx.insertRollout(rolloutRow('r-act-2'), at(301));
        yield* tx.insertTargets([inCluster('r-act-2', 0, undefined), inCluster('r-act-2', 1, 'edge-act')], at(301));
        yield* tx.insertRollout(rolloutRow('r-act-done'), at(302));
        yield* tx.insertTargets([inCluster('r-act-done', 0, 'edge-act')], at(302));
        yield* tx.updateRolloutState('r-act-done', { state: 'SUCCEEDED', message: null, finishedAt: at(303) }, at(303));
        yield* tx.updateRolloutState('r-act-1', { state: 'PAUSED', message: null }, at(303));
      });
      expect(await store.read.activeRolloutIdsInCluster('edge-act')).toEqual(['r-act-1', 'r-act-2']);
      expect(await store.read.activeRolloutIdsInCluster('edge-none')).toEqual([]);
      expect(await store.transaction((tx) => tx.activeRolloutIdsInCluster('edge-act'))).toEqual(['r-act-1', 'r-act-2']);
    });

    it("says which clusters a rollout's targets are in, each once, whatever their state", async () => {
      const states = ['SUCCEEDED', 'PENDING', 'FAILED', 'SKIPPED', 'PROGRESSING', 'CANCELLED'];
      const clusters = ['edge-b', undefined, 'edge-a', 'edge-b', undefined, 'edge-b'];
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-where'), at(310));
        yield* tx.insertTargets(
          states.map((state, i) => ({ ...targetRow('r-where', i, state), ...(clusters[i] === undefined ? {} : { cluster: clusters[i] }) })),
          at(310),
        );
        yield* tx.insertRollout(rolloutRow('r-nowhere'), at(311));
      });
      // A target written without a cluster is in `local`.
      expect(await store.read.clustersOfRollout('r-where')).toEqual(['edge-a', 'edge-b', 'local']);
      expect(await store.read.clustersOfRollout('r-nowhere')).toEqual([]);
      expect(await store.read.clustersOfRollout('r-unknown')).toEqual([]);
      expect(await store.transaction((tx) => tx.clustersOfRollout('r-where'))).toEqual(['edge-a', 'edge-b', 'local']);
    });

    it('lists and counts the rollouts with a target in any of some clusters (ADR 0058), newest first', async () => {
      await store.transaction(function* (tx) {
        yield* tx.insertRollout(rolloutRow('r-in-1'), at(400));
        yield* tx.insertTargets([inCluster('r-in-1', 0, 'edge-in-a')], at(400));
        yield* tx.insertRollout(rolloutRow('r-in-2'), at(401));
        yield* tx.insertTargets([inCluster('r-in-2', 0, undefined), inCluster('r-in-2', 1, 'edge-in-b')], at(401));
        yield* tx.insertRollout(rolloutRow('r-in-3'), at(402));
        yield* tx.insertTargets([inCluster('r-in-3', 0, 'edge-in-c')], at(402));
      });
      const ids = async (clusters: string[]) => (await store.read.listRollouts({ clusters }, undefined, 10)).map((r) => r.id);
      expect(await ids(['edge-in-a'])).toEqual(['r-in-1']);
      expect(await ids(['edge-in-a', 'edge-in-b'])).toEqual(['r-in-2', 'r-in-1']);
      expect(await ids(['edge-in-none'])).toEqual([]);
      expect(await store.read.countRollouts({ clusters: ['edge-in-b', 'edge-in-c'] })).toBe(2);
      const { rows } = await store.read.listRolloutsWithCounts({ clusters: ['edge-in-c'] }, undefined, 10);
      expect(rows.map((r) => r.id)).toEqual(['r-in-3']);
    });

    it('numbers revisions per cluster and keeps in-flight work per cluster', async () => {
      const key = { kind: 'AGENT_POOL', namespace: 'revs-cl', name: 'p' };
      await store.transaction(function* (tx) {
        yield* tx.insertRevisions([
          { ...key, n: 1, version: 'v1', rolloutId: null, appliedAt: at(1) },
          { ...key, cluster: 'edge-1', n: 1, version: 'e1', rolloutId: null, appliedAt: at(1) },
          { ...key, cluster: 'edge-1', n: 2, version: 'e2', rolloutId: null, appliedAt: at(2) },
        ]);
        yield* tx.insertRevision({ ...key, cluster: 'edge-2', n: 1, version: 'x1', rolloutId: null }, at(3));
      });
      expect(await store.read.latestRevisions([key, { ...key, cluster: 'edge-1' }, { ...key, cluster: 'edge-2' }, { ...key, cluster: 'edge-3' }])).toEqual([
        { n: 1, version: 'v1' },
        { n: 2, version: 'e2' },
        { n: 1, version: 'x1' },
        undefined,
      ]);
      expect(await store.read.latestRevision('AGENT_POOL', 'revs-cl', 'p', 'edge-1')).toEqual({ n: 2, version: 'e2' });
      expect(await store.read.latestRevision('AGENT_POOL', 'revs-cl', 'p')).toEqual({ n: 1, version: 'v1' });
      expect((await store.read.revisionPage('AGENT_POOL', 'revs-cl', 'p', undefined, 10, 'edge-1')).map((r) => r.version)).toEqual(['e2', 'e1']);
      expect((await store.read.revisionPage('AGENT_POOL', 'revs-cl', 'p', undefined, 10)).map((r) => r.version)).toEqual(['v1']);

      await store.transaction(function* (tx) {
        yield* tx.putInFlight({ kind: 'AGENT_POOL', namespace: 'x', name: 'q', payload: '{}' }, T0);
        yield* tx.putInFlight({ cluster: 'edge-1', kind: 'AGENT_POOL', namespace: 'x', name: 'q', payload: '{"edge":1}' }, T0);
      });
      expect((await store.read.allInFlight()).map((r) => `${r.cluster}:${r.payload}`).sort()).toEqual(['edge-1:{"edge":1}', 'local:{}']);
      await store.transaction((tx) => tx.deleteInFlight('AGENT_POOL', 'x', 'q', 'edge-1'));
      expect((await store.read.allInFlight()).map((r) => r.cluster)).toEqual(['local']);
      await store.transaction((tx) => tx.deleteInFlight('AGENT_POOL', 'x', 'q'));
      expect(await store.read.allInFlight()).toEqual([]);
    });

    it('stores an event with its cluster: the one named, local for an object, none for a rollout', async () => {
      const { stored } = await store.transactionWithEvents(function* (tx) {
        yield* tx.lastEventId();
        return {
          result: undefined,
          events: [
            event(EventType.TargetFailed, { rolloutId: 'r-ev-cl', kind: 'AGENT_POOL', namespace: 'ns', name: 'p', cluster: 'edge-1', payload: {} }),
            event(EventType.TargetFailed, { rolloutId: 'r-ev-cl', kind: 'AGENT_POOL', namespace: 'ns', name: 'p', payload: {} }),
            event(EventType.RolloutStateChanged, { rolloutId: 'r-ev-cl', kind: 'AGENT_POOL', payload: {} }),
          ],
        };
      });
      expect(stored.map((e) => e.cluster)).toEqual(['edge-1', 'local', null]);
      const read = await store.read.listEventsAfter({ rolloutId: 'r-ev-cl' }, undefined, 10);
      expect(read.events).toEqual(stored);
      // A rollout's events by cluster: no index has (rolloutId, cluster); the read looks through a window of ids.
      const edge = await store.read.listEventsBefore({ rolloutId: 'r-ev-cl', cluster: 'edge-1' }, undefined, 10);
      expect(edge.events.map((e) => e.id)).toEqual([stored[0]!.id]);
      expect(servedByIndex({ cluster: 'edge-1' })).toBe(false);
    });

    it("keeps one object's history per cluster: a member's pool never shows local's pool of the same name (ADR 0060)", async () => {
      const pool = (cluster: string | undefined, type: EventType = EventType.AgentRecreated) =>
        event(type, { kind: 'AGENT_POOL', namespace: 'same-ns', name: 'net-1', ...(cluster ? { cluster } : {}), payload: {} });
      const { stored } = await store.transactionWithEvents(function* (tx) {
        yield* tx.lastEventId();
        return { result: undefined, events: [pool(undefined), pool('edge-1'), pool('local', EventType.TargetFailed), pool('edge-1', EventType.TargetFailed)] };
      });
      const ids = (events: readonly { id: number }[]) => events.map((e) => e.id);
      const eventsBefore = async (...args: Parameters<HistoryStore['read']['listEventsBefore']>) => (await store.read.listEventsBefore(...args)).events;
      const eventsAfter = async (...args: Parameters<HistoryStore['read']['listEventsAfter']>) => (await store.read.listEventsAfter(...args)).events;
      const [local1, edge1, local2, edge2] = ids(stored);
      const object = { kind: 'AGENT_POOL' as const, namespace: 'same-ns', name: 'net-1' };
      // Each per-object read is served by an index that has the cluster: a page holds only its cluster's events.
      for (const filter of [
        object,
        { ...object, cluster: 'edge-1' },
        { ...object, types: [EventType.TargetFailed] },
        { namespace: 'same-ns', name: 'net-1' },
      ]) {
        expect(servedByIndex(filter), JSON.stringify(filter)).toBe(true);
      }
      // Naming no cluster reads local's object (absent means local); a member's history names its cluster.
      expect(ids(await eventsBefore(object, undefined, 10))).toEqual([local2, local1]);
      expect(ids(await eventsBefore({ ...object, cluster: 'local' }, undefined, 10))).toEqual([local2, local1]);
      expect(ids(await eventsBefore({ ...object, cluster: 'edge-1' }, undefined, 10))).toEqual([edge2, edge1]);
      expect(ids(await eventsBefore({ ...object, cluster: 'edge-1', types: [EventType.TargetFailed] }, undefined, 10))).toEqual([edge2]);
      expect(ids(await eventsAfter({ namespace: 'same-ns', name: 'net-1', cluster: 'edge-1' }, undefined, 10))).toEqual([edge1, edge2]);
      // A page of one cluster's history is full however many events the other cluster's object has in between.
      expect(ids(await eventsBefore({ ...object, cluster: 'edge-1' }, undefined, 1))).toEqual([edge2]);
      expect(ids(await eventsBefore({ ...object, cluster: 'edge-1' }, edge2, 1))).toEqual([edge1]);
    });
  });

  describe('readiness', () => {
    it('reports a writable database', async () => {
      await expect(store.checkWritable()).resolves.toBeUndefined();
    });
  });

  // Last, on a database of its own: it leaves the newest stamp an hour ahead of the clock.
  describe('event stamps', () => {
    let own: HistoryStore;
    beforeAll(async () => {
      own = await stores.open();
      others.push(own);
    });
    const appendTo = async (events: NewEvent[]) =>
      (
        await own.transactionWithEvents(
          // biome-ignore lint/correctness/useYield: nothing to change but the events.
          function* () {
            return { result: undefined, events };
          },
        )
      ).stored;

    it('never go back, even when the clock is behind the newest one (a since filter is read as a starting id)', async () => {
      const [first] = await appendTo([event(EventType.RolloutStateChanged, { rolloutId: 'r-clock' })]);
      const ahead = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
      await stores.restampNewestEvent(ahead);
      const [next] = await appendTo([event(EventType.RolloutStateChanged, { rolloutId: 'r-clock' })]);
      expect(next!.createdAt.getTime()).toBe(ahead.getTime());
      const read = (filter: EventFilter) =>
        own.read.listEventsAfter(filter, undefined, 10).then((page) => page.events.map((e) => [e.id, e.createdAt.getTime()]));
      expect(await read({ rolloutId: 'r-clock' })).toEqual([
        [first!.id, ahead.getTime()],
        [next!.id, ahead.getTime()],
      ]);
      expect(await read({ rolloutId: 'r-clock', since: new Date(ahead.getTime() + 1) })).toEqual([]);
      expect((await read({ since: ahead })).map(([id]) => id)).toEqual([first!.id, next!.id]);
      expect((await own.read.listEventsBefore({ since: ahead }, undefined, 10)).events.map((e) => e.id)).toEqual([next!.id, first!.id]);
    });
  });
}
