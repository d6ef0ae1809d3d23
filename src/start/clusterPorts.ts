import type { Logger } from 'pino';
import type { MemberClusters } from '../clusters/MemberClusters.js';
import type { MemberRuntimes } from '../clusters/MemberRuntimes.js';
import type { ClusterPorts } from '../domain/clusterSelection.js';
import type { MemberClusterRegistry } from '../domain/clusters/MemberClusterRegistry.js';
import { isDriven, LOCAL_CLUSTER } from '../domain/clusters/model.js';
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
  runtimes: Pick<MemberRuntimes, 'queriesOf' | 'whyUnreadable'> | undefined,
  logger?: Pick<Logger, 'info'>,
): ClusterPorts {
  return {
    preflightProgress: ({ checked, total, refused, elapsedMs }) =>
      logger?.info({ checked, total, refused, elapsedMs }, `bump preflight: ${checked} of ${total} clusters checked, ${refused} refused`),
    registered: async () => (await registry.list()).map(({ name, labels }) => ({ name, labels })),
    portsOf(cluster, kind) {
      if (cluster === LOCAL_CLUSTER) return { ports: local };
      const connection = connections.get(cluster);
      const health = connection?.health();
      const why = () => runtimes?.whyUnreadable(cluster, kind) ?? `member cluster ${cluster} is not driven by this rollplane`;
      const issue = health && isDriven(health.state) ? connection?.kindIssues().get(kind) : undefined;
      // A kind set aside because its list keeps failing is unavailable, with the cause (its runtime runs the others).
      if (issue?.state === 'FAILING') return { unavailable: why() };
      const ports = runtimes?.queriesOf(cluster);
      if (ports) return issue ? { ports, notServed: `its ${issue.reason}, though discovery lists it` } : { ports };
      // It answers, but its discovery found none of the kind's resources (or their list answers 404): it does not serve
      // the kind (no caches to wait for).
      if (health && isDriven(health.state) && !health.kinds.includes(kind))
        return issue ? { ports: {}, notServed: `its ${issue.reason}, though discovery lists it` } : { ports: {} };
      return { unavailable: why() };
    },
  };
}
