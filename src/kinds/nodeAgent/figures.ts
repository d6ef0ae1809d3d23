import { type KindClusterFigures, VersionTally } from '../../domain/clusterFigures.js';
import type { NodeAgentQueries } from './plan.js';

/**
 * Node agents in one cluster: the images the nodes' agents run (a node without an agent pod counts as unknown), and
 * the drifted count from the kind's drift items, so that it is the count the `drift` query pages through (it also
 * counts agents on a template image set outside rollplane).
 */
export async function nodeAgentFigures(queries: NodeAgentQueries): Promise<KindClusterFigures> {
  const tally = new VersionTally();
  for (const set of queries.listSets()) for (const node of set.nodes) tally.add(node.image, false);
  return { ...tally.figures(), drifted: (await queries.driftItems()).length };
}
