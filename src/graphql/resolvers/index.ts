import type { Resolvers } from '../generated/resolvers.js';
import type { KindApi } from '../kindApi.js';
import { analysisTemplatesResolvers } from './analysisTemplates.js';
import { clusterFieldResolvers } from './clusterFields.js';
import { clusterKindFiguresResolvers } from './clusterKindFigures.js';
import { clustersResolvers } from './clusters.js';
import { coreResolvers } from './core.js';
import { driftResolvers } from './drift.js';
import { notificationsResolvers } from './notifications.js';
import { wavesResolvers } from './waves.js';

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

/**
 * The API's resolvers: the core ones and the notifications', with each registered rollout kind's (its `graphql.ts`,
 * handed over by the composition root from src/kinds: ADR 0045) merged in, and the shared root fields the kinds
 * contribute ports to (`drift`).
 */
export function resolversWith(kinds: readonly KindApi[]): Resolvers {
  return merge(
    coreResolvers,
    clusterFieldResolvers,
    ...kinds.map((kind) => kind.resolvers),
    driftResolvers(kinds),
    notificationsResolvers,
    clustersResolvers,
    wavesResolvers,
    analysisTemplatesResolvers,
    clusterKindFiguresResolvers(kinds),
  );
}
