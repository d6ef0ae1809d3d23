import { type KindClusterFigures, VersionTally } from '../../domain/clusterFigures.js';
import type { VirtualClusterQueries } from './plan.js';

/**
 * Virtual clusters in one cluster: the spec versions their control planes run (unknown until one is applied), and
 * those behind an existing ClusterVersion (as the `drift` query counts them: a cluster naming no existing version is
 * not drifted, it has nothing to catch up to).
 */
export async function virtualClusterFigures(queries: VirtualClusterQueries): Promise<KindClusterFigures> {
  const versions = new Set((await queries.clusterVersions()).map((cv) => cv.name));
  const tally = new VersionTally();
  for (const vc of await queries.virtualClusters()) tally.add(vc.appliedSpecVersion, !vc.upToDate && versions.has(vc.clusterVersionName));
  return tally.figures();
}
