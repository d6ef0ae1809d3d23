import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_LAST_UPGRADE,
  ANNOTATION_PROGRESS,
  LABEL_READY_FOR_UPGRADE,
  TENANCY_GROUP,
  VC_PLURAL,
} from '../../../../src/kinds/virtualCluster/controller/names.js';
import type { KubeObject, StoreEvent } from '../../../../src/sim/types.js';
import { rigPerTest, serviceEnv, startRig } from '../../../e2e/agentPool/rig.js';
import { startService } from '../../../helpers/child.js';
import { type CrashPoint, restartAfterCrash, SERVICE_START_MS } from '../../../helpers/crashPoint.js';
import { gqlData } from '../../../helpers/graphql.js';
import { until } from '../../../helpers/until.js';

const CV = 'cv-sample-np';
const CLUSTERS = ['vc-1', 'vc-2'];
const BUMP = `mutation($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { rollout { id state } } }`;

const t = rigPerTest();

const isCluster = (e: StoreEvent) => e.resource.plural === VC_PLURAL;
const labelled = (vc: KubeObject | undefined) => vc?.metadata.labels?.[LABEL_READY_FOR_UPGRADE] === 'true';
const step = (vc: KubeObject | undefined) => {
  const text = vc?.metadata.annotations?.[ANNOTATION_PROGRESS];
  return text ? (JSON.parse(text) as { step: string }).step : undefined;
};
let cluster: (name: string) => KubeObject | undefined = () => undefined;

/** Each step of rollplane's partial upgrade of one cluster, in the order it happens. */
const POINTS: CrashPoint[] = [
  { name: 'after the opt-in label (admission)', after: (e) => isCluster(e) && labelled(e.object) && !labelled(e.previous) },
  {
    name: 'after the apiserver StatefulSet apply',
    after: (e) =>
      e.resource.plural === 'statefulsets' &&
      e.object.metadata.name === 'apiserver' &&
      e.object.metadata.generation !== e.previous?.metadata.generation &&
      e.type === 'MODIFIED',
  },
  { name: 'after the apiserver step is recorded', after: (e) => isCluster(e) && step(e.object) === 'apiserver' && step(e.previous) !== 'apiserver' },
  {
    name: 'after the controller-manager step is recorded',
    after: (e) => isCluster(e) && step(e.object) === 'controller-manager' && step(e.previous) !== 'controller-manager',
  },
  {
    name: 'before the write that ends the upgrade, after the intent',
    before: (i) => i.verb === 'update' && i.resource.plural === VC_PLURAL && step(cluster(i.name ?? '')) === 'controller-manager',
  },
  {
    name: 'after the write that ends the upgrade',
    after: (e) => isCluster(e) && !labelled(e.object) && labelled(e.previous) && e.object.metadata.annotations?.[ANNOTATION_LAST_UPGRADE] !== undefined,
  },
];

describe('a cluster upgrade, SIGKILLed at each step', () => {
  it.each(POINTS.map((p) => [p.name, p] as const))(
    '%s: one ClusterUpgradeObserved per cluster, carrying the rollout id',
    async (_name, point) => {
      t.rig = await startRig({ fleet: 'clusters=2,nodes=2', noApp: true });
      const r = t.rig;
      const type = r.sim.store.resourceType(TENANCY_GROUP, VC_PLURAL)!;
      cluster = (name) => r.sim.store.get(type, 'default', name);
      const env = serviceEnv(r);
      t.service = await startService(env, SERVICE_START_MS);
      await until(
        'clusters listed',
        async () => (await gqlData(t.service!.url, '{ virtualClusters(first: 10) { totalCount } }')).virtualClusters.totalCount === CLUSTERS.length,
      );
      const { id, url, rollout } = await restartAfterCrash({
        sim: r.sim,
        point,
        env,
        slot: t,
        startRollout: async (at) =>
          (await gqlData(at, BUMP, { input: { clusterVersion: CV, apiServer: { args: ['-v=7'] }, maxConcurrent: 1 } })).bumpClusterVersion.rollout.id,
      });
      expect(rollout.state, rollout.message ?? '').toBe('SUCCEEDED');
      // A target succeeds only once its event is recorded (the driver waits for the intent to go): no wait needed.
      const events = await gqlData(
        url,
        '{ events(filter: { types: [ClusterUpgradeObserved] }, first: 100) { edges { node { rolloutId object { name } payload } } } }',
      );
      expect(events.events.edges.map((e: any) => e.node.object.name).sort()).toEqual(CLUSTERS);
      for (const e of events.events.edges) {
        expect(e.node.rolloutId, e.node.object.name).toBe(id);
        expect(e.node.payload.outcome).toBe('SUCCEEDED');
      }
      for (const name of CLUSTERS) expect(labelled(cluster(name))).toBe(false);
    },
    400_000,
  );
});
