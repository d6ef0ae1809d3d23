import { describe, expect, it } from 'vitest';
import type { KubeObject, StoreEvent } from '../../../../src/sim/types.js';
import { BUMP, NEW, OLD, rigPerTest, serviceEnv, startRig } from '../../../e2e/agentPool/rig.js';
import { startService } from '../../../helpers/child.js';
import { type CrashPoint, podImage, podReady, restartAfterCrash, SERVICE_START_MS } from '../../../helpers/crashPoint.js';
import { gqlData } from '../../../helpers/graphql.js';
import { until } from '../../../helpers/until.js';

const POOLS = 2;
const POOL_LABEL = 'network.harvesterhci.io/ippool-name';

const t = rigPerTest();

const isAgent = (e: StoreEvent) => e.resource.plural === 'pods' && e.object.metadata.labels?.[POOL_LABEL] !== undefined;
const isPool = (e: StoreEvent) => e.resource.plural === 'ippools';
const agentReady = (pool: KubeObject | undefined) =>
  (pool?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'AgentReady' && c.status === 'True');

/** Each step of an agent recreation, in the order it happens. */
const DIRECT: CrashPoint[] = [
  {
    name: 'before the admission (status) write, after the intent',
    before: (i) => i.verb === 'update' && i.resource.plural === 'ippools' && i.subresource === 'status',
  },
  {
    name: 'after the admission write',
    after: (e) => isPool(e) && e.object.status?.agentPodRef?.image === NEW && e.previous?.status?.agentPodRef?.image !== NEW,
  },
  {
    name: 'after the old agent is deleted',
    after: (e) =>
      isAgent(e) && podImage(e.object) === OLD && (e.type === 'DELETED' || (!!e.object.metadata.deletionTimestamp && !e.previous?.metadata.deletionTimestamp)),
  },
  { name: 'after the new agent is created', after: (e) => isAgent(e) && e.type === 'ADDED' && podImage(e.object) === NEW },
  { name: 'after the new agent turns Ready', after: (e) => isAgent(e) && podImage(e.object) === NEW && podReady(e.object) && !podReady(e.previous) },
  {
    name: 'after the event, at the AgentReady status write',
    after: (e) => isPool(e) && e.object.status?.agentPodRef?.image === NEW && agentReady(e.object) && !agentReady(e.previous),
  },
];

/** Beside the vm-dhcp-controller rollplane releases a held pool and upstream replaces the agent. */
const COEXIST: CrashPoint[] = [
  { name: 'before the release (hold removal), after the intent', before: (i) => i.verb === 'patch' && i.resource.plural === 'ippools' && releasing },
  {
    name: 'after the release',
    after: (e) =>
      isPool(e) &&
      e.previous?.metadata.annotations?.['network.harvesterhci.io/hold-ippool-agent-upgrade'] !== undefined &&
      e.object.metadata.annotations?.['network.harvesterhci.io/hold-ippool-agent-upgrade'] === undefined,
  },
  {
    name: 'after upstream deletes the old agent',
    after: (e) =>
      isAgent(e) && podImage(e.object) === OLD && (e.type === 'DELETED' || (!!e.object.metadata.deletionTimestamp && !e.previous?.metadata.deletionTimestamp)),
  },
  { name: 'after the new agent turns Ready', after: (e) => isAgent(e) && podImage(e.object) === NEW && podReady(e.object) && !podReady(e.previous) },
];
/** Set once every pool is held (prepare is done): the next pool patch is a release. */
let releasing = false;

describe.each([
  ['direct mode', '', DIRECT],
  ['beside the vm-dhcp-controller', ',upstream=vm-dhcp', COEXIST],
] as const)('agent recreation, SIGKILLed at each step (%s)', (_mode, upstream, points) => {
  it.each(points.map((p) => [p.name, p] as const))(
    '%s: each pool recreated once, one AgentRecreated each, carrying the rollout id',
    async (_name, point) => {
      releasing = false;
      t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2${upstream}`, delays: { podReadyMs: 50, podTerminateMs: 20 }, noApp: true });
      const r = t.rig;
      const created = new Map<string, number>();
      r.sim.store.subscribe((event) => {
        if (event.type !== 'ADDED' || !isAgent(event)) return;
        const pool = event.object.metadata.labels![POOL_LABEL]!;
        created.set(pool, (created.get(pool) ?? 0) + 1);
      });
      const env = serviceEnv(r);
      t.service = await startService(env, SERVICE_START_MS);
      await until('pools listed', async () => (await gqlData(t.service!.url, '{ agentPools { totalCount } }')).agentPools.totalCount === POOLS);
      const held = r.sim.store.subscribe((event) => {
        if (upstream && isPool(event)) {
          const pools = ['net-1', 'net-2'].map((n) => r.pool(n));
          releasing ||= pools.every((p) => p?.metadata.annotations?.['network.harvesterhci.io/hold-ippool-agent-upgrade'] !== undefined);
        }
      });
      const { id, url, rollout } = await restartAfterCrash({
        sim: r.sim,
        point,
        env,
        slot: t,
        startRollout: async (at) => (await gqlData(at, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' } } })).bumpAgentImage.rollout.id,
      });
      held();
      expect(rollout.state, rollout.message ?? '').toBe('SUCCEEDED');
      for (let i = 1; i <= POOLS; i++) {
        expect(created.get(`net-${i}`), `agents created for net-${i}`).toBe(1);
        expect(podImage(r.agent(`net-${i}`))).toBe(NEW);
      }
      // A target succeeds only once its event is recorded (the driver waits for the intent to go): no wait needed.
      const events = await gqlData(url, '{ events(filter: { types: [AgentRecreated] }, first: 100) { edges { node { rolloutId object { name } payload } } } }');
      const names = events.events.edges.map((e: any) => e.node.object.name).sort();
      expect(names).toEqual(['net-1', 'net-2']);
      for (const e of events.events.edges) expect(e.node.rolloutId, e.node.object.name).toBe(id);
    },
    400_000,
  );
});
