import type { Simulator } from '../../../src/sim/index.js';
import type { KubeObject } from '../../../src/sim/types.js';

/** The cloud-api-adaptor DaemonSet as the simulator's fleet option upstream=caa installs it (its `peerpods` chart). */
export const NS = 'confidential-containers-system';
export const DS = 'cloud-api-adaptor-daemonset';
export const OLD = 'quay.io/confidential-containers/cloud-api-adaptor:v0.10.0';
export const NODES = ['sim-node-1', 'sim-node-2', 'sim-node-3'];
/** Fast but not instant: a rollout's steps stay apart, so the tests see each. */
export const DELAYS = { podScheduleMs: 0, podStartMs: 10, podReadyMs: 40, podTerminateMs: 10, controllerMs: 0 };

/** A pod that serves: Ready and not terminating. */
export const serving = (pod: KubeObject) =>
  !pod.metadata.deletionTimestamp && (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');

/** What the CAA tests read from `sim()` (read lazily: each test starts its own simulator). */
export function caaFleet(sim: () => Simulator) {
  const types = () => ({ pods: sim().store.resourceType('', 'pods')!, daemonsets: sim().store.resourceType('apps', 'daemonsets')! });
  return {
    types,
    daemonSet: () => sim().store.get(types().daemonsets, NS, DS)!,
    /** The node's CAA pods, a SURGE hand-over's retiring one included (it keeps the podLabels label, loses `app`). */
    agentsOn: (node: string) =>
      sim()
        .store.list(types().pods, NS)
        .filter((p) => p.metadata.labels?.['rollplane.io/node-agent'] === 'true' && p.spec?.nodeName === node),
  };
}
