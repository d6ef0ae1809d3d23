import type { KindClusterFigures } from '../domain/clusterFigures.js';
import type { Domain, KindPorts } from '../domain/Domain.js';
import type { DriftItem } from '../domain/drift.js';
import type { RolloutKind } from '../domain/events.js';
import type { Resolvers } from './generated/resolvers.js';
import type { ListSizes } from './queryLimits.js';
import type { CachedRootFields } from './responseCache.js';

/**
 * What a rollout kind contributes to the API (ADR 0045): its resolvers (root fields, its object types, its fields of
 * shared types such as `RolloutStrategy`) and its ports to the shared root fields. Each kind's module satisfies it;
 * the composition root hands the registered ones to `buildSchema`, so GraphQL names no kind.
 */
export interface KindApi {
  readonly kind: RolloutKind;
  readonly resolvers: Resolvers;
  /**
   * Its targets whose running version differs from what they should run (the `drift` query), from one cluster's query
   * ports; none when the ports have none of the kind (not set up, or the cluster does not serve it).
   */
  drift(ports: Partial<KindPorts>): Promise<readonly DriftItem[]>;
  /**
   * Its figures in one cluster (`MemberCluster.kindFigures`: versions with counts, drifted count), from that cluster's
   * query ports, one pass over its caches; undefined when the ports have none of the kind (the cluster does not serve it).
   */
  clusterFigures(ports: Partial<KindPorts>): Promise<KindClusterFigures | undefined>;
  /** The current sizes of its lists that take no `first` (`Type.field` → size), for the cost estimate (listSizes.ts). */
  listSizes?(domain: Domain): ListSizes;
  /**
   * Its root fields whose answers the response cache may keep, by what they are read from (responseCache.ts): only
   * fields that read nothing but the history (`history`), or it and the informers' caches (`cluster`).
   */
  readonly cachedRootFields?: CachedRootFields;
}
