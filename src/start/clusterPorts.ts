import type { MemberClusters } from '../clusters/MemberClusters.js';
import type { MemberRuntimes } from '../clusters/MemberRuntimes.js';
import type { ClusterPorts } from '../domain/clusterSelection.js';
import type { MemberClusterRegistry } from '../domain/clusters/MemberClusterRegistry.js';
import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import type { KindPorts } from '../domain/Domain.js';

/**
 * The domain's one way to a kind's query port in a cluster (docs/adr/0058-bump-across-clusters.md): `local`'s own ports,
 * a member's from its runtime's caches, which every replica keeps whichever replica holds the member's shard (ADR 0059):
 * a bump is planned alike on any replica.
 */
export function clusterPortsOf(
  local: Partial<KindPorts>,
  registry: Pick<MemberClusterRegistry, 'list'>,
  connections: Pick<MemberClusters, 'get'>,
  runtimes: Pick<MemberRuntimes, 'queriesOf' | 'whyNotDriven'> | undefined,
): ClusterPorts {
  return {
    registered: async () => (await registry.list()).map(({ name, labels }) => ({ name, labels })),
    portsOf(cluster, kind) {
      if (cluster === LOCAL_CLUSTER) return { ports: local };
      const ports = runtimes?.queriesOf(cluster);
      if (ports) return { ports };
      const health = connections.get(cluster)?.health();
      // Ready, but its discovery found none of the kind's resources: it does not serve the kind (no caches to wait for).
      if (health?.state === 'READY' && !health.kinds.includes(kind)) return { ports: {} };
      const why = runtimes?.whyNotDriven(cluster, kind) ?? `member cluster ${cluster} is not driven by this rollplane`;
      return { unavailable: why.replace(/: its targets wait$/, '') };
    },
  };
}
