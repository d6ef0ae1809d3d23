import { type KindClusterFigures, VersionTally } from '../../domain/clusterFigures.js';
import { type AgentPoolQueries, isDrifted } from './plan.js';

/** Agent pools in one cluster: the images their agents run, and the pools drifted as the `drift` query counts them. */
export async function agentPoolFigures(queries: AgentPoolQueries): Promise<KindClusterFigures> {
  const tally = new VersionTally();
  for (const pool of await queries.all()) tally.add(pool.runningImage, isDrifted(pool));
  return tally.figures();
}
