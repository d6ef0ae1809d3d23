import type { Resolvers } from '../generated/resolvers.js';
import { agentPoolsResolvers } from './agentPools.js';
import { coreResolvers } from './core.js';
import { nodeAgentsResolvers } from './nodeAgents.js';
import { notificationsResolvers } from './notifications.js';
import { virtualClustersResolvers } from './virtualClusters.js';

type ResolverMap = Record<string, unknown>;

/** Per-type merge of the resolver modules (each kind adds its root fields and types). */
function merge(...maps: Resolvers[]): Resolvers {
  const merged: Record<string, unknown> = {};
  for (const map of maps) {
    for (const [typeName, value] of Object.entries(map)) {
      const existing = merged[typeName];
      const isPlainMap = (v: unknown) => typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
      merged[typeName] = isPlainMap(existing) && isPlainMap(value) ? { ...(existing as ResolverMap), ...(value as ResolverMap) } : value;
    }
  }
  return merged as Resolvers;
}

export const resolvers = merge(coreResolvers, agentPoolsResolvers, virtualClustersResolvers, nodeAgentsResolvers, notificationsResolvers);
