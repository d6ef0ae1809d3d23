import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import type { Resolvers } from '../generated/resolvers.js';

/**
 * The member cluster of a rollout's targets (ADR 0054): the domain's targets name a cluster only outside `local`
 * (absent is `local`); the API always says which. An event's is mapped with it (mappers.ts, eventToGraphQL).
 */
export const clusterFieldResolvers: Resolvers = {
  RolloutTarget: { cluster: (target) => target.cluster ?? LOCAL_CLUSTER },
  // A plan's items, as a bump answers them (ADR 0058): grouped by cluster, each naming its own.
  PlanItem: { cluster: (item) => item.cluster ?? LOCAL_CLUSTER },
};
