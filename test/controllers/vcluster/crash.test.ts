import { afterEach, describe, expect, it } from 'vitest';
import { ANNOTATION_LAST_UPGRADE, ANNOTATION_PROGRESS, LABEL_READY_FOR_UPGRADE, TENANCY_GROUP, VC_PLURAL } from '../../../src/controllers/vcluster/names.js';
import type { KubeObject, StoreEvent } from '../../../src/sim/types.js';
import { FAST_ENV, startRig, type Rig } from '../../e2e/agentpool/rig.js';
import { killIfRunning, startService, type ServiceProcess } from '../../helpers/child.js';
import { armCrash, type CrashPoint } from '../../helpers/crashPoint.js';
import { gqlData } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';

const CV = 'cv-sample-np';
const CLUSTERS = ['vc-1', 'vc-2'];
const BUMP = `mutation($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { rollout { id state } } }`;
const ROLLOUT = `query($id: ID!) { rollout(id: $id) { state message } }`;

/** Generous: the bound only catches a service that never starts (a loaded machine starts it slowly). */
const START_MS = 120_000;

let rig: Rig | undefined;
let service: ServiceProcess | undefined;
afterEach(async () => {
  await killIfRunning(service);
  service = undefined;
  await rig?.close();
  rig = undefined;
});

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
      rig = await startRig({ fleet: 'clusters=2,nodes=2', noApp: true });
      const r = rig;
      const type = r.sim.store.resourceType(TENANCY_GROUP, VC_PLURAL)!;
      cluster = (name) => r.sim.store.get(type, 'default', name);
      const env = { ...FAST_ENV, LOG_LEVEL: 'warn', DATABASE_URL: `file:${r.databaseFile}`, ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: r.sim.kubeconfigPath };
      service = await startService(env, START_MS);
      await until(
        'clusters listed',
        async () => (await gqlData(service!.url, '{ virtualClusters(first: 10) { totalCount } }')).virtualClusters.totalCount === CLUSTERS.length,
      );
      const crash = armCrash(r.sim, point, () => service?.child);
      const bump = await gqlData(service.url, BUMP, { input: { clusterVersion: CV, apiServer: { args: ['-v=7'] }, maxConcurrent: 1 } });
      const id = bump.bumpClusterVersion.rollout.id;
      await until(`the crash point "${point.name}"`, () => crash.fired(), 120_000);
      crash.disarm();
      expect((await service.exited).signal).toBe('SIGKILL');

      service = await startService(env, START_MS);
      const url = service.url;
      const done = await until(
        'rollout finished',
        async () => {
          const data = await gqlData(url, ROLLOUT, { id });
          return ['SUCCEEDED', 'FAILED'].includes(data.rollout.state) ? data.rollout : undefined;
        },
        90_000,
      );
      expect(done.state, done.message).toBe('SUCCEEDED');
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
      service.child.kill('SIGTERM');
      await service.exited;
    },
    400_000,
  );
});
