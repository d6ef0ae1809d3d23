import type { V1Pod } from '@kubernetes/client-node';
import { AppError, ErrorCode, isAppError } from '../../../errors.js';
import { refusal } from '../../../controllers/dryRunRefusal.js';
import { kubeCall, mergePatchOptions, type KubeClients } from '../../../kube/index.js';
import { type AgentSettings, agentPodManifest } from './manifests.js';
import { ANNOTATION_HELD_BY, ANNOTATION_HOLD, IPPOOL_GROUP, IPPOOL_PLURAL, IPPOOL_VERSION, LABEL_CLUSTER_NETWORK, ROLLPLANE_HOLD_VALUE } from './names.js';
import type { IPPool } from './types.js';

/**
 * Server-side dry runs of what a rollout is about to write (issue 27): the API server runs every admission step on a
 * dry run — built-in admission, schemas, and validating webhooks such as the vm-dhcp webhook, which checks every IPPool
 * UPDATE (its NetworkAttachmentDefinition, CIDR, range, server IP) with failurePolicy Fail — and writes nothing. A
 * refusal comes back as an AppError naming what was refused and carrying the API server's own message:
 * CONFLICT when something refused the write (a webhook denied it, admission forbade it), UNAVAILABLE when nothing could
 * answer (the webhook has no endpoints, times out). `details.reason` is PREFLIGHT_REFUSED (../dryRunRefusal.ts).
 */

/** The dry-run holds (one per pool) take the plain JSON path, as the holds themselves (src/kube/jsonRequests.ts). */
const mergePatch = mergePatchOptions();
const CONCURRENCY = 16;

/** The hold a rollout writes on a pool (the same merge patch `prepare` sends). */
export function holdPatch(rolloutId: string): { metadata: { annotations: Record<string, string> } } {
  return { metadata: { annotations: { [ANNOTATION_HOLD]: ROLLPLANE_HOLD_VALUE, [ANNOTATION_HELD_BY]: rolloutId } } };
}

/** Dry-runs the hold on every pool, a few at a time; the first refusal (by pool order) is thrown, naming the others. */
export async function dryRunHolds(clients: KubeClients, pools: readonly IPPool[], rolloutId: string): Promise<void> {
  const refusals: { index: number; error: AppError }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < pools.length) {
      const index = next++;
      const pool = pools[index]!;
      const ref = `${pool.metadata!.namespace}/${pool.metadata!.name}`;
      try {
        await kubeCall(`ippool ${ref} cannot be held`, () =>
          clients.custom.patchNamespacedCustomObject(
            {
              group: IPPOOL_GROUP,
              version: IPPOOL_VERSION,
              plural: IPPOOL_PLURAL,
              namespace: pool.metadata!.namespace!,
              name: pool.metadata!.name!,
              body: holdPatch(rolloutId),
              dryRun: 'All',
            },
            mergePatch,
          ),
        );
      } catch (error) {
        if (isAppError(error) && error.code === ErrorCode.NotFound) continue; // deleted meanwhile: nothing to hold
        refusals.push({ index, error: refusal(error, { pool: ref }) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, pools.length) }, worker));
  if (refusals.length === 0) return;
  refusals.sort((a, b) => a.index - b.index);
  const first = refusals[0]!.error;
  const others = refusals.slice(1).map((r) => r.error.details.pool as string);
  throw new AppError(first.code, others.length ? `${first.message} (and ${others.length} more pool(s): ${others.slice(0, 10).join(', ')})` : first.message, {
    details: { ...first.details, pools: [first.details.pool, ...others] },
  });
}

/**
 * Direct mode: dry-runs the creation of one pool's agent as rollplane would create it, so that a missing agent
 * ServiceAccount (a `helm uninstall` of the chart deletes it) or any other admission refusal shows before anything is
 * written. An agent that exists already answers AlreadyExists after admission passed: that is a pass.
 */
export async function dryRunAgentCreation(clients: KubeClients, pool: IPPool, image: string, settings: AgentSettings): Promise<void> {
  const clusterNetwork = pool.metadata?.labels?.[LABEL_CLUSTER_NETWORK] ?? 'mgmt';
  const body: V1Pod = agentPodManifest(pool, image, clusterNetwork, settings);
  try {
    await kubeCall(`the agent of ippool ${pool.metadata!.namespace}/${pool.metadata!.name} could not be created`, () =>
      clients.core.createNamespacedPod({ namespace: settings.namespace, body, dryRun: 'All' }),
    );
  } catch (error) {
    if (isAppError(error) && error.details.reason === 'AlreadyExists') return;
    throw refusal(error, {
      pool: `${pool.metadata!.namespace}/${pool.metadata!.name}`,
      serviceAccount: `${settings.namespace}/${settings.serviceAccountName}`,
    });
  }
}
