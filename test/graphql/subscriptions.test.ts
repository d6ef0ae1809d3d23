import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../src/domain/events.js';
import { collect, wsClient } from '../helpers/graphql.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';

const EVENTS = `subscription($after: ID, $filter: EventFilter) { events(after: $after, filter: $filter) { id type object { name } payload } }`;

describe('subscriptions over graphql-ws', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  const recreated = (name: string, i: number) => ({
    type: EventType.AgentRecreated,
    kind: 'AGENT_POOL' as const,
    namespace: 'default',
    name,
    payload: { pool: `default/${name}`, oldImage: 'agent:v1', newImage: 'agent:v2', newPodUid: `uid-${i}`, reason: 'drift', seconds: 1.5 },
  });

  it('delivers events appended through the domain layer, live', async () => {
    const client = wsClient(app.url);
    const base = app.bus.subscriberCount();
    const sub = collect(client, `subscription { agentRecreated(filter: { namespace: "default" }) { eventId poolName newImage reason seconds } }`);
    // Without `after` a subscription sees only what is committed once it is registered (asynchronously); wait for it.
    await until('the bus to register the subscriber', () => app.bus.subscriberCount() > base);
    await app.domain.events.append(recreated('live-1', 1));
    await app.domain.events.append({ ...recreated('other-ns', 2), namespace: 'kube-system' });
    await app.domain.events.append(recreated('live-2', 3));
    await sub.waitFor(2);
    expect(sub.results.map((r: any) => r.agentRecreated.poolName)).toEqual(['live-1', 'live-2']);
    expect(sub.results[0].agentRecreated).toMatchObject({ newImage: 'agent:v2', reason: 'drift', seconds: 1.5 });
    sub.unsubscribe();
    await client.dispose();
  });

  it('resuming with `after` replays exactly the missed events, in order, then continues live', async () => {
    const first = wsClient(app.url);
    const filter = { namespace: 'resume-ns' };
    const sub1 = collect(first, EVENTS, { filter, after: String(await app.domain.events.lastEventId()) });
    for (let i = 0; i < 3; i++) await app.domain.events.append({ ...recreated(`p${i}`, i), namespace: 'resume-ns' });
    await sub1.waitFor(3);
    const lastSeen = sub1.results[2].events.id as string;
    sub1.unsubscribe();
    await first.dispose();

    // While disconnected, 50 more events happen (and some unrelated ones).
    for (let i = 3; i < 53; i++) {
      await app.domain.events.append({ ...recreated(`p${i}`, i), namespace: 'resume-ns' });
      if (i % 10 === 0) await app.domain.events.append(recreated(`unrelated${i}`, i));
    }

    const second = wsClient(app.url);
    const sub2 = collect(second, EVENTS, { after: lastSeen, filter });
    await sub2.waitFor(50);
    // Live events appended concurrently with the replay must be neither lost nor duplicated.
    const appending = (async () => {
      for (let i = 53; i < 73; i++) await app.domain.events.append({ ...recreated(`p${i}`, i), namespace: 'resume-ns' });
    })();
    await appending;
    await sub2.waitFor(70);
    // A marker appended last: a subscriber gets events in order, so once the marker is there a duplicate of the 70
    // would be there too (no wait on time for "nothing more came").
    await app.domain.events.append({ ...recreated('marker', 73), namespace: 'resume-ns' });
    await sub2.waitFor(71);
    const seqs = sub2.results.map((r: any) => Number(r.events.payload.newPodUid.slice(4)));
    expect(seqs).toEqual(Array.from({ length: 71 }, (_, k) => k + 3));
    const ids = sub2.results.map((r: any) => Number(r.events.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    sub2.unsubscribe();
    await second.dispose();
  });

  it('replays events appended concurrently by many writers without a gap or duplicate', async () => {
    const client = wsClient(app.url);
    const filter = { namespace: 'concurrent-ns' };
    const sub = collect(client, EVENTS, { after: String(await app.domain.events.lastEventId()), filter });
    await Promise.all(Array.from({ length: 100 }, (_, i) => app.domain.events.append({ ...recreated(`c${i}`, i), namespace: 'concurrent-ns' })));
    await sub.waitFor(100);
    const ids = sub.results.map((r: any) => Number(r.events.id));
    expect(new Set(ids).size).toBe(100);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(sub.results.map((r: any) => Number(r.events.payload.newPodUid.slice(4))).sort((a: number, b: number) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
    sub.unsubscribe();
    await client.dispose();
  });

  it('refuses a malformed `after` with BAD_USER_INPUT', async () => {
    const client = wsClient(app.url);
    const sub = collect(client, EVENTS, { after: 'yesterday' });
    await sub.waitFor(1);
    expect(JSON.stringify(sub.errors)).toContain('BAD_USER_INPUT');
    await client.dispose();
  });

  it('streams rollout state changes with the rollout as it is after the change', async () => {
    const { rollout } = await app.domain.rollouts.create({
      kind: 'VIRTUAL_CLUSTER',
      fromVersion: '1',
      toVersion: '2',
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER),
      cause: {},
      targets: [{ namespace: 'tenant', name: 'vc-1', fromVersion: '1', toVersion: '2' }],
    });
    const client = wsClient(app.url);
    const sub = collect(
      client,
      `subscription($id: ID) { rolloutUpdated(filter: { rolloutId: $id }, after: "0") { event { type payload } rollout { id state } } }`,
      { id: rollout.id },
    );
    await sub.waitFor(1);
    await app.domain.rollouts.pause(rollout.id, 'hold on');
    await sub.waitFor(2);
    expect(sub.results.map((r: any) => r.rolloutUpdated.event.payload.to)).toEqual(['PENDING', 'PAUSED']);
    expect(sub.results[1].rolloutUpdated.rollout).toEqual({ id: rollout.id, state: 'PAUSED' });
    await client.dispose();
  });
});
