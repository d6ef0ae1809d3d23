import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventType, type StoredEvent } from '../../../src/domain/events.js';
import { EMPTY_FILTER, type Route } from '../../../src/domain/notifications/model.js';
import { filterFrom, oncePerFrom } from '../../../src/domain/notifications/NotificationService.js';
import { cloudEventOf, slackTextOf } from '../../../src/domain/notifications/render.js';
import { backoffMs, retryAfterMs, verdictOf } from '../../../src/domain/notifications/retryPolicy.js';
import { matchesNotificationFilter, notificationTypeOf, onceKeyOf, routeEvents, type RoutableEvent } from '../../../src/domain/notifications/routing.js';
import { signatureHeader, verifySignature } from '../../../src/domain/notifications/signature.js';
// The kinds' own event types (their notification names, their payloads' fields) are defined by the registered kinds
// (ADR 0051), as in the server, which loads this list.
import '../../../src/kinds/index.js';

const rollout = (to: string, extra: Partial<RoutableEvent> = {}): RoutableEvent => ({
  type: EventType.RolloutStateChanged,
  rolloutId: 'ro_1',
  kind: 'AGENT_POOL',
  payload: { from: 'PROGRESSING', to },
  ...extra,
});
const target = (to: string): RoutableEvent => ({
  type: EventType.TargetStateChanged,
  rolloutId: 'ro_1',
  kind: 'AGENT_POOL',
  namespace: 'default',
  name: 'p1',
  payload: { from: 'PROGRESSING', to },
});
const route = (extra: Partial<Route> = {}): Route => ({ subscriptionId: 'ns_1', sinkKind: 'WEBHOOK', filter: EMPTY_FILTER, oncePer: [], ...extra });

describe('notification routing', () => {
  it('names CloudEvents types by what moved where', () => {
    expect(notificationTypeOf(rollout('FAILED'))).toBe('io.rollplane.rollout.failed.v1');
    expect(notificationTypeOf(rollout('ROLLED_BACK'))).toBe('io.rollplane.rollout.rolled_back.v1');
    expect(notificationTypeOf(target('SUCCEEDED'))).toBe('io.rollplane.target.succeeded.v1');
    expect(notificationTypeOf({ type: EventType.TargetFailed, payload: {} })).toBe('io.rollplane.target.error.v1');
    expect(notificationTypeOf({ type: EventType.AgentRecreated, payload: {} })).toBe('io.rollplane.agent.recreated.v1');
  });

  it('matches a filter on every non-empty list, and an event without the value does not match a list that asks for one', () => {
    const f = filterFrom({ types: ['RolloutStateChanged', 'TargetFailed'], states: ['FAILED'] });
    expect(matchesNotificationFilter(rollout('FAILED'), f)).toBe(true);
    expect(matchesNotificationFilter(rollout('SUCCEEDED'), f)).toBe(false);
    expect(matchesNotificationFilter({ type: EventType.TargetFailed, rolloutId: 'ro_1', payload: { error: 'x' } }, f)).toBe(true);
    expect(matchesNotificationFilter(target('FAILED'), f)).toBe(false);
    expect(matchesNotificationFilter({ type: EventType.AgentRecreated, payload: {} }, filterFrom({ states: ['FAILED'] }))).toBe(false);
    expect(matchesNotificationFilter(rollout('FAILED'), filterFrom({ clusters: ['local'] }))).toBe(true);
    expect(matchesNotificationFilter(rollout('FAILED', { payload: { to: 'FAILED', cluster: 'edge-1' } }), filterFrom({ clusters: ['local'] }))).toBe(false);
    expect(matchesNotificationFilter(rollout('FAILED'), filterFrom({ kinds: ['NODE_AGENT'] }))).toBe(false);
    expect(matchesNotificationFilter(rollout('FAILED', { rolloutId: null }), filterFrom({ rolloutIds: ['ro_1'] }))).toBe(false);
    expect(matchesNotificationFilter({ type: EventType.AgentRecreated, payload: {} }, EMPTY_FILTER)).toBe(true);
    // Payloads are read through their type's schema (ADR 0046): a ClusterUpgradeObserved's `cluster` is its
    // VirtualCluster, not a member cluster, so the event is in `local`; a state that is not one is no state.
    const upgraded: RoutableEvent = {
      type: EventType.ClusterUpgradeObserved,
      kind: 'VIRTUAL_CLUSTER',
      payload: { cluster: 'tenants/vc-1', outcome: 'FAILED' },
    };
    expect(matchesNotificationFilter(upgraded, filterFrom({ clusters: ['local'] }))).toBe(true);
    expect(onceKeyOf(upgraded, ['CLUSTER'])).toBe('io.rollplane.cluster_upgrade.observed.v1|cluster=local');
    expect(matchesNotificationFilter(rollout('DONE'), filterFrom({ states: ['SUCCEEDED'] }))).toBe(false);
    expect(notificationTypeOf(rollout('DONE'))).toBe('io.rollplane.rollout.changed.v1');
  });

  it('keys "once per" on the type and stable fields only, in a fixed order, and sends events that lack a field', () => {
    const fields = oncePerFrom(['WAVE', 'ROLLOUT', 'WAVE']);
    expect(fields).toEqual(['ROLLOUT', 'WAVE']);
    const paused = (message: string) => rollout('PAUSED', { payload: { to: 'PAUSED', wave: 2, message } });
    expect(onceKeyOf(paused('paused after 3s at 12:00:01'), fields)).toBe('io.rollplane.rollout.paused.v1|rollout=ro_1|wave=2');
    expect(onceKeyOf(paused('paused after 9s at 12:07:44'), fields)).toBe(onceKeyOf(paused('x'), fields));
    expect(onceKeyOf(rollout('PAUSED'), fields)).toBeNull();
    expect(onceKeyOf(target('FAILED'), ['TARGET', 'CLUSTER'])).toBe('io.rollplane.target.failed.v1|cluster=local|target=AGENT_POOL/default/p1');
    expect(onceKeyOf(rollout('PAUSED'), [])).toBeNull();
    expect(() => oncePerFrom(['MESSAGE'])).toThrow(/not one of ROLLOUT, WAVE, CLUSTER, GATE, TARGET/);
  });

  it('routes each event to each matching subscription, keeps the first of a once-per key in a batch, and orders Slack by rollout', () => {
    const entries = routeEvents(
      [rollout('PAUSED'), rollout('PROGRESSING'), rollout('PAUSED'), { type: EventType.AgentRecreated, payload: {} }],
      [
        route({ subscriptionId: 'ns_all' }),
        route({ subscriptionId: 'ns_once', filter: filterFrom({ states: ['PAUSED'] }), oncePer: ['ROLLOUT'] }),
        route({ subscriptionId: 'ns_slack', sinkKind: 'SLACK', filter: filterFrom({ types: ['RolloutStateChanged'] }) }),
      ],
    );
    expect(entries.filter((e) => e.subscriptionId === 'ns_all').map((e) => e.eventIndex)).toEqual([0, 1, 2, 3]);
    expect(entries.filter((e) => e.subscriptionId === 'ns_once').map((e) => e.eventIndex)).toEqual([0]);
    expect(entries.filter((e) => e.subscriptionId === 'ns_slack').map((e) => e.lane)).toEqual(['ns_slack|ro_1', 'ns_slack|ro_1', 'ns_slack|ro_1']);
    expect(entries.find((e) => e.subscriptionId === 'ns_all')!.lane).toBeNull();
    expect(routeEvents([rollout('PAUSED')], [])).toEqual([]);
  });

  it("tells nobody of an upstream controller's first-seen image (a baseline, not a change), and does of its changes", () => {
    const seen = (payload: Record<string, unknown>): RoutableEvent => ({ type: EventType.UpstreamControllerChanged, payload });
    const entries = routeEvents(
      [seen({ oldImage: null, newImage: 'a:1', planned: false, firstSeen: true }), seen({ oldImage: 'a:1', newImage: 'a:2', planned: false })],
      [route({ subscriptionId: 'ns_all' })],
    );
    expect(entries.map((e) => e.eventIndex)).toEqual([1]);
  });

  it("selects clusters by name and by label selector (either), a rollout's own events by its targets' clusters", () => {
    const facts = {
      clustersOfRollout: new Map([['ro_1', ['edge-1', 'local']]]),
      labelsOf: new Map([
        ['edge-1', { tier: 'edge' }],
        ['core-1', { tier: 'core' }],
      ]),
    };
    const inCluster = (cluster: string): RoutableEvent => ({ ...target('FAILED'), cluster });
    const edge = filterFrom({ clusterSelector: ' tier=edge ' });
    expect(edge.clusterSelector).toBe('tier=edge');
    expect(matchesNotificationFilter(inCluster('edge-1'), edge, facts)).toBe(true);
    expect(matchesNotificationFilter(inCluster('core-1'), edge, facts)).toBe(false);
    // Unregistered (no labels): only a name selects it.
    expect(matchesNotificationFilter(inCluster('gone'), edge, facts)).toBe(false);
    expect(matchesNotificationFilter(inCluster('core-1'), filterFrom({ clusters: ['core-1'], clusterSelector: 'tier=edge' }), facts)).toBe(true);
    // A rollout's own event is in each cluster its targets are in; without facts, in local (as before clusters).
    expect(matchesNotificationFilter(rollout('FAILED'), edge, facts)).toBe(true);
    expect(matchesNotificationFilter(rollout('FAILED'), filterFrom({ clusters: ['core-1'] }), facts)).toBe(false);
    expect(matchesNotificationFilter(rollout('FAILED'), filterFrom({ clusters: ['local'] }))).toBe(true);
    expect(matchesNotificationFilter(rollout('FAILED'), edge)).toBe(false);
    // An object's event in local names no cluster column when built by hand: local.
    expect(matchesNotificationFilter(target('FAILED'), filterFrom({ clusters: ['local'] }))).toBe(true);
    expect(matchesNotificationFilter(inCluster('edge-1'), EMPTY_FILTER, facts)).toBe(true);
    expect(routeEvents([rollout('FAILED'), inCluster('core-1')], [route({ subscriptionId: 'ns_edge', filter: edge })], facts).map((e) => e.eventIndex)).toEqual(
      [0],
    );
    expect(() => filterFrom({ clusterSelector: 'tier in ()' })).toThrow(/input.filter.clusterSelector.*not a label selector/);
  });

  it('refuses filters outside the vocabulary and bounds its lists', () => {
    expect(() => filterFrom({ types: ['Nope'] })).toThrow(/input.filter.types/);
    expect(() => filterFrom({ clusters: ['Not_A_Label'] })).toThrow(/not a valid cluster name/);
    expect(() => filterFrom({ rolloutIds: Array.from({ length: 101 }, (_, i) => `ro_${i}`) })).toThrow(/at most 100/);
  });
});

describe('notification payloads', () => {
  const event: StoredEvent = {
    id: 42,
    type: EventType.TargetStateChanged,
    rolloutId: 'ro_1',
    kind: 'AGENT_POOL',
    namespace: 'default',
    name: 'p1',
    payload: { from: 'PROGRESSING', to: 'FAILED', error: 'image <!channel> & <https://evil|click>' },
    createdAt: new Date('2026-12-05T10:00:00.000Z'),
  };

  it('renders a CloudEvent from the committed event only', () => {
    expect(cloudEventOf(event, 'https://rollplane.example.com')).toEqual({
      specversion: '1.0',
      id: '42',
      source: 'https://rollplane.example.com',
      type: 'io.rollplane.target.failed.v1',
      subject: 'rollouts/ro_1',
      time: '2026-12-05T10:00:00.000Z',
      datacontenttype: 'application/json',
      data: {
        id: '42',
        type: 'TargetStateChanged',
        rolloutId: 'ro_1',
        kind: 'AGENT_POOL',
        namespace: 'default',
        name: 'p1',
        cluster: 'local',
        payload: event.payload,
        createdAt: '2026-12-05T10:00:00.000Z',
      },
    });
  });

  it("says a member cluster's object's cluster: in the CloudEvent's data, and in Slack text when it is not local", () => {
    const member: StoredEvent = { ...event, cluster: 'edge-1' };
    expect(cloudEventOf(member, 'https://r.example.com').data.cluster).toBe('edge-1');
    expect(cloudEventOf({ ...event, type: EventType.RolloutStateChanged, name: null, namespace: null, cluster: null }, 'https://r').data.cluster).toBeNull();
    expect(slackTextOf(member)).toContain('`default/p1` in cluster `edge-1` in `ro_1`');
    expect(slackTextOf(event)).not.toContain('cluster');
  });

  it('escapes what events say in Slack text, so an error message cannot mention a channel or open a link', () => {
    const text = slackTextOf(event, 'https://rollplane.example.com/#/rollouts/ro_1');
    expect(text).toContain('image &lt;!channel&gt; &amp; &lt;https://evil|click&gt;');
    expect(text).toContain('<https://rollplane.example.com/#/rollouts/ro_1|ro_1>');
    expect(text).not.toContain('<!channel>');
  });
});

describe('signatures and retries', () => {
  it('verifies only the body and time that were signed, within the replay window', () => {
    const header = signatureHeader('s'.repeat(32), 1_800_000_000, '{"a":1}');
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(verifySignature('s'.repeat(32), header, '{"a":1}', 1_800_000_100)).toBe(true);
    expect(verifySignature('s'.repeat(32), header, '{"a":2}', 1_800_000_100)).toBe(false);
    expect(verifySignature('t'.repeat(32), header, '{"a":1}', 1_800_000_100)).toBe(false);
    expect(verifySignature('s'.repeat(32), header, '{"a":1}', 1_800_000_301)).toBe(false);
    expect(verifySignature('s'.repeat(32), header.replace('t=1800000000', 't=1800000200'), '{"a":1}', 1_800_000_200)).toBe(false);
    expect(verifySignature('s'.repeat(32), undefined, '{"a":1}', 1_800_000_000)).toBe(false);
  });

  it('is verified by the snippet docs/notifications.md gives receivers', async () => {
    const doc = readFileSync(path.join(import.meta.dirname, '../../../docs/notifications.md'), 'utf8');
    const snippet = /```js\n([\s\S]*?)```/.exec(doc)![1]!;
    const { verifyRollplane } = (await import(`data:text/javascript,${encodeURIComponent(snippet)}`)) as {
      verifyRollplane: (secret: string, header: string, body: string, now?: number) => boolean;
    };
    const header = signatureHeader('s'.repeat(32), 1_800_000_000, '{"a":1}');
    expect(verifyRollplane('s'.repeat(32), header, '{"a":1}', 1_800_000_100)).toBe(true);
    expect(verifyRollplane('s'.repeat(32), header, '{"a":2}', 1_800_000_100)).toBe(false);
    expect(verifyRollplane('s'.repeat(32), header, '{"a":1}', 1_800_000_301)).toBe(false);
  });

  it('backs off exponentially with jitter between half and all of each step, up to the cap', () => {
    const policy = { baseMs: 1000, maxMs: 10_000 };
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, policy, () => 0))).toEqual([500, 1000, 2000, 4000, 5000]);
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, policy, () => 1))).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect(backoffMs(500, policy, () => 1)).toBe(10_000);
  });

  it('retries what may pass later and dead-letters what will not', () => {
    expect([200, 204, 408, 425, 429, 500, 503, 301, 400, 401, 404, 410, 422].map(verdictOf)).toEqual([
      'delivered',
      'delivered',
      'retry',
      'retry',
      'retry',
      'retry',
      'retry',
      'permanent',
      'permanent',
      'permanent',
      'permanent',
      'permanent',
      'permanent',
    ]);
    expect(retryAfterMs('30', 0, 10_000)).toBe(10_000);
    expect(retryAfterMs('2', 0, 10_000)).toBe(2000);
    expect(retryAfterMs('soon', 0, 10_000)).toBeUndefined();
  });
});
