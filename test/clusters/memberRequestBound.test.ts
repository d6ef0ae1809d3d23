import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemberKubeConfig } from '../../src/clusters/MemberKubeConfig.js';
import { kubeClientsOf } from '../../src/kube/createKubeClients.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';

/**
 * A member cluster's request timeout bounds the per-target writes too (src/kube/jsonRequests.ts, the plain JSON path
 * that skips client-node's middleware): a status replace, a pod create and a pod delete to a member that
 * stopped answering (black-holed, no answer at all) are aborted at ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS like any other
 * request. Before, only client-node's own calls were: the write hung for ever, and with it the rollout's admission
 * pass over every cluster (found by `npm run bench -- clusters`, issue 29).
 */
const TIMEOUT_MS = 300;
/** The call's answer, asked again while it times out (only before the cluster is black-holed: it is up). */
async function answered<T>(call: () => Promise<T>, attempts = 100): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= attempts || !/abort/i.test(String((error as Error)?.message ?? error))) throw error;
    }
  }
}

const POOL = { group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools', namespace: 'default', name: 'net-1' };

describe("a member's request timeout on the per-target writes", () => {
  let fleet: SimulatedClusters;
  let clients: ReturnType<typeof kubeClientsOf>;
  let pool: Record<string, unknown>;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: [{ name: 'edge-1', fleet: 'pools=1,nodes=1,peers=0', behaviour: false }] });
    const source = new KubeConfig();
    source.loadFromString(fleet.clusters.get('edge-1')!.kubeconfig);
    const kubeConfig = MemberKubeConfig.from(source, { qps: 1000, burst: 1000, requestTimeoutMs: TIMEOUT_MS, signal: new AbortController().signal });
    clients = kubeClientsOf(kubeConfig);
    // Answered while the cluster is up, over the same path and its kept connection. On a loaded machine an answer
    // may take longer than the short timeout under test: tried again until one comes (the cluster is up).
    pool = (await answered(() => clients.custom.getNamespacedCustomObject(POOL))) as Record<string, unknown>;
    await answered(() => clients.custom.replaceNamespacedCustomObjectStatus({ ...POOL, body: pool }));
    await fleet.set('edge-1', 'blackhole');
  });
  afterAll(async () => {
    await fleet?.stop();
  });

  /**
   * Resolves with what the call did once it settled. A call the timeout does not bound never settles: the test's own
   * timeout then fails it (no wall-clock race here).
   */
  const settled = (call: () => Promise<unknown>) =>
    call().then(
      () => 'answered',
      (error: unknown) => `failed: ${String((error as Error)?.message ?? error)}`,
    );

  it('aborts a status replace, a pod create and a pod delete that get no answer', async () => {
    const outcomes = await Promise.all([
      settled(() => clients.custom.replaceNamespacedCustomObjectStatus({ ...POOL, body: pool })),
      settled(() =>
        clients.core.createNamespacedPod({
          namespace: 'default',
          body: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
        }),
      ),
      settled(() => clients.core.deleteNamespacedPod({ namespace: 'default', name: 'p' })),
    ]);
    expect(outcomes).toHaveLength(3);
    for (const outcome of outcomes) expect(outcome).toMatch(/^failed: .*abort/i);
  });
});
