import { afterEach, describe, expect, it } from 'vitest';
import { collect, wsClient } from '../../helpers/graphql.js';
import { BUMP, NEW, OLD, startRig, waitForRollout, type Rig } from './rig.js';
import { until } from '../../helpers/until.js';
import { waitQuiet } from '../../helpers/quiet.js';
import { EventType } from '../../../src/domain/events.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const RECREATED = `subscription S($after: ID, $filter: AgentRecreatedFilter) { agentRecreated(after: $after, filter: $filter) {
  eventId rolloutId poolNamespace poolName oldImage newImage oldPodUid newPodUid reason deletedAt readyAt seconds } }`;

/** An AgentRecreated event for a pool that does not exist, appended to the history after everything else. */
function appendSentinel(r: Rig) {
  const at = new Date().toISOString();
  return r.app.domain.events.append({
    type: EventType.AgentRecreated,
    namespace: 'default',
    name: 'sentinel',
    payload: {
      pool: 'default/sentinel',
      oldImage: OLD,
      newImage: NEW,
      oldPodUid: 'old',
      newPodUid: 'new',
      reason: 'drift',
      deletedAt: at,
      readyAt: at,
      seconds: 0,
    },
  });
}

describe('agent recreation history', () => {
  it('streams exactly one AgentRecreated per recreated pool, and a client reconnecting with `after` misses none', async () => {
    rig = await startRig({ fleet: 'pools=4,nodes=2', delays: { podReadyMs: 30 } });
    const r = rig;
    const live = wsClient(r.url);
    const first = wsClient(r.url);
    try {
      const all = collect(live, RECREATED);
      const early = collect(first, RECREATED);
      // Both subscriptions are open on the server (its gauge counts them) before anything is recreated.
      await until('both subscriptions to be open', async () => ((await r.app.metrics.subscriptionsActive.get()).values[0]?.value ?? 0) >= 2);
      const bump = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' } } });
      const id = bump.bumpAgentImage.rollout.id;
      await early.waitFor(1);
      early.unsubscribe();
      const seen = early.results.map((x: any) => x.agentRecreated);
      const lastSeen = seen[seen.length - 1].eventId;
      await waitForRollout(r, id, ['SUCCEEDED']);
      await all.waitFor(4);
      // No recreation is left to come (the controllers are quiet); then a sentinel event, appended after all of them:
      // a subscriber is sent every event once and in id order, so once the sentinel arrives, whatever the stream had
      // still to send about the rollout has arrived before it.
      await waitQuiet(r.app.manager, r.sim.store);
      const sentinel = String((await appendSentinel(r))[0]!.id);
      await all.waitFor(5);
      const received = all.results.map((x: any) => x.agentRecreated);
      expect(received[received.length - 1].eventId).toBe(sentinel);
      const events = received.slice(0, -1);
      expect(events).toHaveLength(4);
      expect(new Set(events.map((e: any) => e.poolName))).toEqual(new Set(['net-1', 'net-2', 'net-3', 'net-4']));
      for (const e of events) {
        expect(e).toMatchObject({ rolloutId: id, poolNamespace: 'default', oldImage: OLD, newImage: NEW, reason: 'drift' });
        expect(e.newPodUid).toBe(r.agent(e.poolName)!.metadata.uid);
        expect(e.oldPodUid).not.toBe(e.newPodUid);
        expect(new Date(e.readyAt).getTime()).toBeGreaterThanOrEqual(new Date(e.deletedAt).getTime());
        expect(e.seconds).toBeGreaterThanOrEqual(0);
      }

      // Reconnect after the last event the first client saw: the rest arrives, nothing twice.
      const again = wsClient(r.url);
      try {
        const resumed = collect(again, RECREATED, { after: lastSeen });
        // Up to and including the sentinel: the resumed stream has nothing before it left to send.
        await resumed.waitFor(4 - seen.length + 1);
        const ids = [...seen, ...resumed.results.map((x: any) => x.agentRecreated)].map((e: any) => e.eventId);
        expect(ids).toEqual([...events.map((e: any) => e.eventId), sentinel]);
        resumed.unsubscribe();
      } finally {
        await again.dispose();
      }
      all.unsubscribe();
    } finally {
      await live.dispose();
      await first.dispose();
    }
  });

  it('replaces an agent stuck Terminating on a crashed node (force delete after the grace period)', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=3', agent: { stuckGraceSeconds: 1 } });
    const r = rig;
    const stuck = r.agent('net-1')!;
    const node = stuck.spec.nodeName as string;
    r.sim.nodes!.crash(node);
    const bump = await r.gql(BUMP, { input: { image: NEW, pools: { names: ['net-1'] } } });
    const done = await waitForRollout(r, bump.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED']);
    expect(done.state).toBe('SUCCEEDED');
    const agent = r.agent('net-1')!;
    expect(agent.metadata.uid).not.toBe(stuck.metadata.uid);
    expect(agent.spec.nodeName).not.toBe(node);
    expect(agent.spec.containers[0].image).toBe(NEW);
    const history = await r.gql(`{ events(filter: { types: [AgentForceDeleted], name: "net-1" }) { edges { node { type payload } } } }`);
    expect(history.events.edges).toHaveLength(1);
    expect(history.events.edges[0].node.payload).toMatchObject({ podUid: stuck.metadata.uid, node, graceSeconds: 1 });
  });

  it('with the grace period disabled, a stuck agent stays stuck (upstream behaviour) and the pool reports why', async () => {
    rig = await startRig({ fleet: 'pools=1,nodes=2', agent: { stuckGraceSeconds: null } });
    const r = rig;
    const stuck = r.agent('net-1')!;
    r.sim.nodes!.crash(stuck.spec.nodeName);
    await r.gql(BUMP, { input: { image: NEW, strategy: { progressDeadlineSeconds: 600 } } });
    await r.waitFor('marked for deletion', () =>
      r
        .pool('net-1')!
        .status.conditions.some(
          (c: any) => c.type === 'Registered' && c.status === 'False' && c.message === `agent pod ${stuck.metadata.name} marked for deletion`,
        ),
    );
    // Quiet: the controllers have handled every event up to now; a force delete (or a recreation) would be a write
    // whose watch event keeps them busy until handled.
    await waitQuiet(r.app.manager, r.sim.store, ['agentpool', 'rollouts']);
    expect(r.agent('net-1')!.metadata.uid).toBe(stuck.metadata.uid);
    const drift = await r.gql(`{ drift { totalCount edges { node { kind namespace name desiredVersion runningVersion } } } }`);
    expect(drift.drift.edges.map((e: any) => e.node)).toEqual([
      { kind: 'AGENT_POOL', namespace: 'default', name: 'net-1', desiredVersion: NEW, runningVersion: OLD },
    ]);
    const drifted = await r.gql(`{ agentPools(filter: { drifted: true }) { totalCount } }`);
    expect(drifted.agentPools.totalCount).toBe(1);
  });
});
