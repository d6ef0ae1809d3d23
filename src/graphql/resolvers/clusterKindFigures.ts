import { portsHere } from '../../domain/clusterSelection.js';
import type { ClusterKindFigures, Resolvers } from '../generated/resolvers.js';
import type { KindApi } from '../kindApi.js';

/**
 * `MemberCluster.kindFigures`: each registered kind's figures in the cluster, from its query ports there (the domain's
 * cluster seam, ADR 0058: a member's caches, kept on every replica), computed per query, one pass per kind. A kind
 * whose caches are not available (unreachable, syncing) is listed when the cluster's discovery found it, with the
 * reason and null figures, as is a kind a DEGRADED cluster cannot read; a kind the cluster does not serve is left out.
 */
export function clusterKindFiguresResolvers(kinds: readonly KindApi[]): Resolvers {
  return {
    MemberCluster: {
      kindFigures: async (cluster, _, ctx) => {
        const seam = portsHere(ctx.domain);
        const figures: ClusterKindFigures[] = [];
        for (const api of kinds) {
          const answer = seam.portsOf(cluster.name, api.kind);
          if ('unavailable' in answer) {
            // A kind it serves, or one a DEGRADED cluster set aside because its list keeps failing (ADR 0066): the
            // only kinds of a cluster that answers for which the seam says unavailable rather than "not served".
            if (cluster.kinds.includes(api.kind) || cluster.health.state === 'DEGRADED')
              figures.push({ kind: api.kind, versions: null, otherVersionsCount: null, drifted: null, unavailable: answer.unavailable });
            continue;
          }
          const found = await api.clusterFigures(answer.ports);
          if (found) figures.push({ kind: api.kind, ...found, unavailable: null });
        }
        return figures;
      },
    },
  };
}
