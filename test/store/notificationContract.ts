import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type NewEvent, type StoredEvent } from '../../src/domain/events.js';
import { EMPTY_FILTER, type NotificationFilter, type OncePerField, type SinkKind } from '../../src/domain/notifications/model.js';
import type { NewSubscription, NotificationStore } from '../../src/domain/notifications/NotificationStore.js';
import type { HistoryStore } from '../../src/store/port.js';
import type { MemberClusterStore } from '../../src/domain/clusters/MemberClusterStore.js';
import type { EventPayload } from '../../src/domain/eventPayloads.js';
import type { RolloutState } from '../../src/domain/rolloutStates.js';
import { untypedEvent } from '../helpers/events.js';
import { rolloutRow, targetRow } from './historyContract.js';

/**
 * The notification store's contract (domain/notifications/NotificationStore.ts) and the outbox that
 * HistoryStore.transactionWithEvents writes, run against every store. `open` gives both stores on a fresh, migrated
 * database; `connect` another replica's on the same database.
 */
export interface NotificationStores {
  history: HistoryStore;
  notifications: NotificationStore;
  /** The member cluster registry on the same database (routing by a cluster label selector reads its labels). */
  clusters: MemberClusterStore;
  close(): Promise<void>;
}

export interface NotificationStoreFactory {
  open(): Promise<NotificationStores>;
  connect(): Promise<NotificationStores>;
}

const T0 = new Date('2026-12-05T12:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

let subscriptions = 0;
function subscription(extra: Partial<Omit<NewSubscription, 'filter'>> & { filter?: Partial<NotificationFilter> } = {}): NewSubscription {
  const n = ++subscriptions;
  return {
    id: `ns_${String(n).padStart(4, '0')}`,
    name: `sub-${n}`,
    sinkKind: 'WEBHOOK' as SinkKind,
    url: `https://hooks.example.com/${n}`,
    secret: `secret-${n}`,
    channel: '',
    createdBy: 'admin',
    ...extra,
    filter: { ...EMPTY_FILTER, ...extra.filter },
    oncePer: extra.oncePer ?? ([] as OncePerField[]),
  };
}

function rolloutEvent(rolloutId: string, to: RolloutState, extra: Partial<EventPayload<'RolloutStateChanged'>> = {}): NewEvent {
  return { type: EventType.RolloutStateChanged, rolloutId, kind: 'AGENT_POOL', payload: { from: 'PENDING', to, message: null, ...extra } };
}

export function notificationContract(factory: () => NotificationStoreFactory): void {
  let stores: NotificationStores;
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    stores = await factory().open();
    closers.push(() => stores.close());
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });
  const append = (events: NewEvent[], history = stores.history): Promise<StoredEvent[]> =>
    history
      // biome-ignore lint/correctness/useYield: nothing to change but the events.
      .transactionWithEvents(function* () {
        return { result: undefined, events };
      })
      .then((c) => c.stored);
  const deliveriesOf = async (subscriptionId: string) =>
    (await stores.notifications.listDeliveries({ subscriptionId }, undefined, 1000)).sort((a, b) => a.id - b.id);

  describe('subscriptions', () => {
    it('are inserted, found, listed by id, changed and deleted (kept, their pending deliveries cancelled)', async () => {
      const { notifications } = stores;
      const a = await notifications.insertSubscription(subscription({ filter: { types: [EventType.TargetFailed] }, oncePer: ['ROLLOUT'] }), T0);
      expect(a).toMatchObject({ sinkKind: 'WEBHOOK', secret: a.secret, filter: { types: ['TargetFailed'], kinds: [] }, oncePer: ['ROLLOUT'], deletedAt: null });
      expect(a.createdAt).toEqual(T0);
      const b = await notifications.insertSubscription(subscription({ sinkKind: 'SLACK', secret: '', channel: 'C1' }), T0);
      expect(await notifications.findSubscription(a.id)).toEqual(a);
      expect((await notifications.listSubscriptions(undefined, 1)).map((s) => s.id)).toEqual([a.id]);
      expect((await notifications.listSubscriptions(a.id, 10)).map((s) => s.id)).toContain(b.id);

      const changed = await notifications.updateSubscription(a.id, { name: 'renamed', filter: { ...EMPTY_FILTER, kinds: ['NODE_AGENT'] } }, at(1));
      expect(changed).toMatchObject({ name: 'renamed', url: a.url, secret: a.secret, filter: { kinds: ['NODE_AGENT'], types: [] } });
      expect(changed!.updatedAt).toEqual(at(1));
      expect(await notifications.updateSubscription('ns_missing', { name: 'x' }, at(1))).toBeUndefined();

      const before = await notifications.countSubscriptions();
      await append([rolloutEvent('r-del', 'PROGRESSING')]);
      expect((await deliveriesOf(b.id)).map((d) => d.state)).toEqual(['PENDING']);
      const deleted = await notifications.deleteSubscription(b.id, at(2));
      expect(deleted!.deletedAt).toEqual(at(2));
      expect(await notifications.deleteSubscription(b.id, at(3))).toBeUndefined();
      expect(await notifications.updateSubscription(b.id, { name: 'again' }, at(3))).toBeUndefined();
      expect(await notifications.countSubscriptions()).toBe(before - 1);
      expect(await notifications.subscriptionIds()).not.toContain(b.id);
      expect((await deliveriesOf(b.id)).map((d) => d.state)).toEqual(['CANCELLED']);
      // A deleted subscription routes nothing more.
      await append([rolloutEvent('r-del', 'SUCCEEDED')]);
      expect(await deliveriesOf(b.id)).toHaveLength(1);
      await notifications.deleteSubscription(a.id, at(4));
    });
  });

  describe('the outbox', () => {
    it('writes a delivery per matching subscription with the event, due at once, and none for a filter that matches nothing', async () => {
      const { notifications } = stores;
      const all = await notifications.insertSubscription(subscription(), T0);
      const failures = await notifications.insertSubscription(subscription({ filter: { types: [EventType.RolloutStateChanged], states: ['FAILED'] } }), T0);
      const nothing = await notifications.insertSubscription(subscription({ filter: { kinds: ['VIRTUAL_CLUSTER'], clusters: ['edge-1'] } }), T0);
      const stored = await append([rolloutEvent('r-out', 'PROGRESSING'), rolloutEvent('r-out', 'FAILED')]);
      const toAll = await deliveriesOf(all.id);
      expect(toAll.map((d) => d.eventId)).toEqual(stored.map((e) => e.id));
      expect(toAll[0]).toMatchObject({ state: 'PENDING', attempts: 0, onceKey: null, lane: null, lastError: null });
      expect(toAll[0]!.nextAttemptAt).toEqual(toAll[0]!.createdAt);
      expect(toAll[1]!.event).toEqual(stored[1]);
      expect((await deliveriesOf(failures.id)).map((d) => d.eventId)).toEqual([stored[1]!.id]);
      expect(await deliveriesOf(nothing.id)).toEqual([]);
      for (const s of [all, failures, nothing]) await notifications.deleteSubscription(s.id, at(1));
    });

    it("routes by cluster: names and a label selector over the registry, a rollout's own events by its targets' clusters", async () => {
      const { notifications, history, clusters } = stores;
      await clusters.put({ name: 'edge-1', labels: { tier: 'edge' }, source: 'FILE', sourceRef: 'f' }, T0);
      await clusters.put({ name: 'core-1', labels: { tier: 'core' }, source: 'FILE', sourceRef: 'f' }, T0);
      const byName = await notifications.insertSubscription(subscription({ filter: { clusters: ['core-1'] } }), T0);
      const bySelector = await notifications.insertSubscription(subscription({ filter: { clusterSelector: 'tier=edge' } }), T0);
      const local = await notifications.insertSubscription(subscription({ filter: { clusters: ['local'] } }), T0);
      const failed = (cluster: string): NewEvent => ({
        type: EventType.TargetFailed,
        rolloutId: 'r-clusters',
        kind: 'AGENT_POOL',
        namespace: 'default',
        name: 'net-1',
        cluster,
        payload: { error: 'x' },
      });
      // A rollout with targets in edge-1 and local: its own state change is in both.
      const stored = await history
        .transactionWithEvents(function* (tx) {
          yield* tx.insertRollout(rolloutRow('r-clusters'), T0);
          yield* tx.insertTargets(
            ['edge-1', 'local'].map((cluster, ordinal) => ({
              ...targetRow('r-clusters', ordinal, 'PENDING', 'AGENT_POOL', 'default'),
              name: 'net-1',
              cluster,
            })),
            T0,
          );
          return { result: undefined, events: [rolloutEvent('r-clusters', 'PROGRESSING'), failed('edge-1'), failed('core-1'), failed('local')] };
        })
        .then((c) => c.stored);
      const ids = async (subscriptionId: string) => (await deliveriesOf(subscriptionId)).map((d) => stored.findIndex((e) => e.id === d.eventId));
      expect(await ids(byName.id)).toEqual([2]);
      expect(await ids(bySelector.id)).toEqual([0, 1]);
      expect(await ids(local.id)).toEqual([0, 3]);
      // Labels are read when the events are: relabelled, core-1 is selected from then on.
      await clusters.put({ name: 'core-1', labels: { tier: 'edge' }, source: 'FILE', sourceRef: 'f' }, at(1));
      const later = await append([failed('core-1')]);
      expect((await deliveriesOf(bySelector.id)).map((d) => d.eventId)).toContain(later[0]!.id);
      for (const s of [byName, bySelector, local]) await notifications.deleteSubscription(s.id, at(2));
    });

    it('keeps no delivery of a transaction whose events cannot be stored', async () => {
      const { notifications } = stores;
      const all = await notifications.insertSubscription(subscription(), T0);
      await expect(
        // biome-ignore lint/correctness/useYield: nothing to change but the events.
        stores.history.transactionWithEvents(function* () {
          return { result: undefined, events: [rolloutEvent('r-bad', 'PROGRESSING'), untypedEvent({ type: null as unknown as EventType })] };
        }),
      ).rejects.toThrow();
      expect(await deliveriesOf(all.id)).toEqual([]);
      const [after] = await append([rolloutEvent('r-good', 'PROGRESSING')]);
      expect((await deliveriesOf(all.id)).map((d) => d.eventId)).toEqual([after!.id]);
      await notifications.deleteSubscription(all.id, at(1));
    });

    it('sends once per stable fields: a wave that flaps, in one transaction or several, makes one delivery', async () => {
      const { notifications } = stores;
      const perWave = await notifications.insertSubscription(subscription({ filter: { states: ['PAUSED'] }, oncePer: ['ROLLOUT', 'WAVE'] }), T0);
      // `wave` is a routing field no writer sets yet (eventPayloads.ts ROUTING_FIELDS): written here as issue 30's will.
      const waved = (rolloutId: string, to: RolloutState, wave: string, message?: string) => {
        const event = rolloutEvent(rolloutId, to, message ? { message } : {});
        return untypedEvent({ ...event, payload: { ...event.payload, wave } });
      };
      const flapping = [
        waved('r-wave', 'PAUSED', 'canary', 'paused at 12:00:01 after 3s'),
        waved('r-wave', 'PROGRESSING', 'canary'),
        waved('r-wave', 'PAUSED', 'canary', 'paused at 12:00:09 after 11s'),
      ];
      const first = await append(flapping);
      await append([waved('r-wave', 'PAUSED', 'canary', 'paused again')]);
      // Another wave, another rollout: each its own.
      const [otherWave] = await append([waved('r-wave', 'PAUSED', 'prod')]);
      const [otherRollout] = await append([waved('r-wave-2', 'PAUSED', 'canary')]);
      const sent = await deliveriesOf(perWave.id);
      expect(sent.map((d) => d.eventId)).toEqual([first[0]!.id, otherWave!.id, otherRollout!.id]);
      expect(sent[0]!.onceKey).toBe('io.rollplane.rollout.paused.v1|rollout=r-wave|wave=canary');
      await notifications.deleteSubscription(perWave.id, at(1));
    });

    it('routes by a subscription another replica made, from the next transaction on', async () => {
      const other = await factory().connect();
      closers.push(() => other.close());
      // Routes are cached by both: each has routed a transaction before the subscription exists.
      await append([rolloutEvent('r-gen', 'PENDING')]);
      await append([rolloutEvent('r-gen', 'PENDING')], other.history);
      const made = await other.notifications.insertSubscription(subscription({ filter: { rolloutIds: ['r-gen'] } }), T0);
      const [here] = await append([rolloutEvent('r-gen', 'PROGRESSING')]);
      const [there] = await append([rolloutEvent('r-gen', 'SUCCEEDED')], other.history);
      expect((await deliveriesOf(made.id)).map((d) => d.eventId)).toEqual([here!.id, there!.id]);
      // And stops routing once the other replica deletes it.
      await other.notifications.deleteSubscription(made.id, at(1));
      await append([rolloutEvent('r-gen', 'ROLLED_BACK')]);
      expect(await deliveriesOf(made.id)).toHaveLength(2);
    });
  });

  describe('deliveries', () => {
    it('are due soonest first, a Slack lane one at a time in event order, and record attempts, threads and the last dispatch', async () => {
      const { notifications } = stores;
      const slack = await notifications.insertSubscription(subscription({ sinkKind: 'SLACK', secret: '' }), T0);
      const events = await append([rolloutEvent('r-lane', 'PROGRESSING'), rolloutEvent('r-lane', 'PAUSED'), rolloutEvent('r-lane-2', 'PROGRESSING')]);
      const [first, second, otherLane] = await deliveriesOf(slack.id);
      expect(first!.lane).toBe(`${slack.id}|r-lane`);
      const later = new Date(Date.now() + 60_000);
      let due = await notifications.dueDeliveries(slack.id, later, 10);
      expect(due.map((d) => d.eventId)).toEqual([events[0]!.id, events[2]!.id]);
      expect(due[0]!.threadTs).toBeNull();
      expect(due[0]!.event).toEqual(events[0]);

      // A failed attempt: due again later, and still at the head of its lane.
      const retryAt = new Date(later.getTime() + 60_000);
      expect(
        await notifications.recordAttempt(first!.id, 0, { state: 'PENDING', at: at(10), statusCode: 500, error: 'HTTP 500: oops', nextAttemptAt: retryAt }),
      ).toBe(true);
      // A stale attempt (the count moved on) is not recorded.
      expect(await notifications.recordAttempt(first!.id, 0, { state: 'DELIVERED', at: at(11), statusCode: 200, error: null, nextAttemptAt: null })).toBe(
        false,
      );
      due = await notifications.dueDeliveries(slack.id, later, 10);
      expect(due.map((d) => d.eventId)).toEqual([events[2]!.id]);
      expect(await notifications.nextAttemptAt(slack.id)).toBeDefined();
      expect((await notifications.findSubscription(slack.id))!).toMatchObject({ lastStatusCode: 500, lastError: 'HTTP 500: oops', lastDeliveredAt: null });

      expect(
        await notifications.recordAttempt(first!.id, 1, {
          state: 'DELIVERED',
          at: at(12),
          statusCode: 200,
          error: null,
          nextAttemptAt: null,
          thread: { rolloutId: 'r-lane', ts: '1700000000.000100' },
        }),
      ).toBe(true);
      due = await notifications.dueDeliveries(slack.id, later, 10);
      expect(due.map((d) => [d.eventId, d.threadTs])).toEqual([
        [events[1]!.id, '1700000000.000100'],
        [events[2]!.id, null],
      ]);
      const delivered = await notifications.findDelivery(first!.id);
      expect(delivered).toMatchObject({ state: 'DELIVERED', attempts: 2, lastStatusCode: 200, lastError: null, nextAttemptAt: null });
      expect(delivered!.deliveredAt).toEqual(at(12));
      expect((await notifications.findSubscription(slack.id))!).toMatchObject({ lastStatusCode: 200, lastError: null });
      expect((await notifications.findSubscription(slack.id))!.lastDeliveredAt).toEqual(at(12));

      // Dead-lettered: out of the queue, visible, counted; replayed by id it is due again with no attempts.
      await notifications.recordAttempt(second!.id, 0, {
        state: 'DEAD_LETTER',
        at: at(13),
        statusCode: null,
        error: 'connection refused',
        nextAttemptAt: null,
      });
      expect((await notifications.deliveryCounts([slack.id])).get(slack.id)).toEqual({ pending: 1, delivered: 1, deadLettered: 1, cancelled: 0 });
      expect((await notifications.listDeliveries({ subscriptionId: slack.id, states: ['DEAD_LETTER'] }, undefined, 10)).map((d) => d.id)).toEqual([second!.id]);
      expect(await notifications.replay({ ids: [second!.id] }, at(14))).toBe(1);
      expect(await notifications.findDelivery(second!.id)).toMatchObject({ state: 'PENDING', attempts: 0, lastError: null });
      expect(otherLane!.state).toBe('PENDING');
      await notifications.deleteSubscription(slack.id, at(15));
    });

    it('replay a range of events in the given states, never cancelled ones, and page newest first', async () => {
      const { notifications } = stores;
      const hook = await notifications.insertSubscription(subscription(), T0);
      const events = await append([1, 2, 3, 4].map((n) => rolloutEvent(`r-range-${n}`, 'SUCCEEDED')));
      const ds = await deliveriesOf(hook.id);
      for (const d of ds) await notifications.recordAttempt(d.id, 0, { state: 'DELIVERED', at: at(1), statusCode: 204, error: null, nextAttemptAt: null });
      await notifications.recordAttempt(ds[3]!.id, 1, { state: 'DELIVERED', at: at(1), statusCode: 204, error: null, nextAttemptAt: null });
      expect(
        await notifications.replay({ subscriptionId: hook.id, fromEventId: events[1]!.id, toEventId: events[2]!.id, states: ['DEAD_LETTER'] }, at(2)),
      ).toBe(0);
      expect(await notifications.replay({ subscriptionId: hook.id, fromEventId: events[1]!.id, toEventId: events[2]!.id, states: ['DELIVERED'] }, at(2))).toBe(
        2,
      );
      expect((await deliveriesOf(hook.id)).map((d) => d.state)).toEqual(['DELIVERED', 'PENDING', 'PENDING', 'DELIVERED']);
      const page1 = await notifications.listDeliveries({ subscriptionId: hook.id }, undefined, 3);
      expect(page1.map((d) => d.id)).toEqual([ds[3]!.id, ds[2]!.id, ds[1]!.id]);
      expect((await notifications.listDeliveries({ subscriptionId: hook.id }, page1[2]!.id, 3)).map((d) => d.id)).toEqual([ds[0]!.id]);
      expect((await notifications.listDeliveries({ rolloutId: 'r-range-2' }, undefined, 10)).map((d) => d.id)).toEqual([ds[1]!.id]);
      expect((await notifications.listDeliveries({ eventId: events[0]!.id }, undefined, 10)).map((d) => d.id)).toEqual([ds[0]!.id]);

      const stats = await notifications.queueStats();
      expect(stats.pending).toBeGreaterThanOrEqual(2);
      expect(stats.oldestCreatedAt).toBeInstanceOf(Date);
      // Deleting the subscription cancels its two pending deliveries; nothing of a deleted subscription is replayed.
      await notifications.deleteSubscription(hook.id, at(3));
      expect(await notifications.replay({ ids: ds.map((d) => d.id) }, at(4))).toBe(0);
      expect((await deliveriesOf(hook.id)).map((d) => d.state)).toEqual(['DELIVERED', 'CANCELLED', 'CANCELLED', 'DELIVERED']);
    });

    it('prune what is no longer pending and was written before a cutoff', async () => {
      const { notifications } = stores;
      const hook = await notifications.insertSubscription(subscription(), T0);
      await append([rolloutEvent('r-prune', 'SUCCEEDED'), rolloutEvent('r-prune', 'ROLLED_BACK')]);
      const [done, pending] = await deliveriesOf(hook.id);
      await notifications.recordAttempt(done!.id, 0, { state: 'DELIVERED', at: at(1), statusCode: 200, error: null, nextAttemptAt: null });
      expect(await notifications.pruneBefore(new Date(Date.now() + 60_000))).toBeGreaterThanOrEqual(1);
      expect((await deliveriesOf(hook.id)).map((d) => d.id)).toEqual([pending!.id]);
      await notifications.deleteSubscription(hook.id, at(2));
    });
  });
}
