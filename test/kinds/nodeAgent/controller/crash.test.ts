import { describe, expect, it } from 'vitest';
import type { StoreEvent } from '../../../../src/sim/types.js';
import { rigPerTest, serviceEnv, startRig } from '../../../e2e/agentPool/rig.js';
import { startService } from '../../../helpers/child.js';
import { type CrashPoint, podImage, podReady, restartAfterCrash, SERVICE_START_MS } from '../../../helpers/crashPoint.js';
import { gqlData } from '../../../helpers/graphql.js';
import { until } from '../../../helpers/until.js';

const DS_NS = 'confidential-containers-system';
const DS_NAME = 'cloud-api-adaptor-daemonset';
const OLD = 'quay.io/confidential-containers/cloud-api-adaptor:v0.10.0';
const NEW = 'quay.io/confidential-containers/cloud-api-adaptor:v0.11.0';
const NODES = ['sim-node-1', 'sim-node-2'];
const BUMP = `mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { rollout { id state } } }`;

const t = rigPerTest();

const isAgent = (e: StoreEvent) => e.resource.plural === 'pods' && e.object.metadata.namespace === DS_NS;
const gone = (e: StoreEvent) => e.type === 'DELETED' || (!!e.object.metadata.deletionTimestamp && !e.previous?.metadata.deletionTimestamp);

/** Each step of a node-agent replacement (NODE_BY_NODE), in the order it happens. */
const POINTS: CrashPoint[] = [
  {
    name: 'after the DaemonSet template gets the new image',
    after: (e) =>
      e.resource.plural === 'daemonsets' &&
      e.object.metadata.name === DS_NAME &&
      podImage(e.object.spec?.template) === NEW &&
      podImage(e.previous?.spec?.template) !== NEW,
  },
  { name: 'before the old agent is deleted, after the intent', before: (i) => i.verb === 'delete' && i.resource.plural === 'pods' && i.namespace === DS_NS },
  { name: 'after the old agent is deleted', after: (e) => isAgent(e) && podImage(e.object) === OLD && gone(e) },
  { name: 'after the new agent is created', after: (e) => isAgent(e) && e.type === 'ADDED' && podImage(e.object) === NEW },
  { name: 'after the new agent turns Ready', after: (e) => isAgent(e) && podImage(e.object) === NEW && podReady(e.object) && !podReady(e.previous) },
];

describe('a node-agent replacement, SIGKILLed at each step', () => {
  it.each(POINTS.map((p) => [p.name, p] as const))(
    '%s: one NodeAgentReplaced per node, carrying the rollout id',
    async (_name, point) => {
      t.rig = await startRig({ fleet: `nodes=${NODES.length}`, delays: { podReadyMs: 40, podTerminateMs: 10 }, noApp: true });
      const r = t.rig;
      const created = new Map<string, number>();
      r.sim.store.subscribe((event) => {
        if (event.type === 'ADDED' && isAgent(event) && podImage(event.object) === NEW)
          created.set(event.object.spec.nodeName, (created.get(event.object.spec.nodeName) ?? 0) + 1);
      });
      const env = serviceEnv(r);
      t.service = await startService(env, SERVICE_START_MS);
      const agents = () => r.sim.store.list(r.sim.store.resourceType('', 'pods')!).filter((p) => p.metadata.namespace === DS_NS);
      await until('agents Ready', () => agents().length === NODES.length && agents().every(podReady));
      const { id, url, rollout } = await restartAfterCrash({
        sim: r.sim,
        point,
        env,
        slot: t,
        startRollout: async (at) => (await gqlData(at, BUMP, { input: { namespace: DS_NS, name: DS_NAME, image: NEW } })).bumpNodeAgentImage.rollout.id,
      });
      expect(rollout.state, rollout.message ?? '').toBe('SUCCEEDED');
      for (const node of NODES) expect(created.get(node), `new agents on ${node}`).toBe(1);
      // A target succeeds only once its event is recorded (the intent goes with it): no wait needed.
      const events = await gqlData(
        url,
        '{ events(filter: { types: [NodeAgentReplaced] }, first: 100) { edges { node { rolloutId object { name } payload } } } }',
      );
      expect(events.events.edges.map((e: any) => e.node.object.name).sort()).toEqual(NODES);
      for (const e of events.events.edges) {
        expect(e.node.rolloutId, e.node.object.name).toBe(id);
        // The old agent is known from the intent, also when it was deleted by the process that died.
        expect(e.node.payload.oldImage).toBe(OLD);
        expect(e.node.payload.oldPod, e.node.object.name).not.toBeNull();
      }
    },
    400_000,
  );
});
