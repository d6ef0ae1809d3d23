import type { Domain } from '../domain/Domain.js';
import type { DriftItem } from '../domain/drift.js';
import type { RolloutKind } from '../domain/events.js';
import type { Resolvers } from './generated/resolvers.js';
import type { ListSizes } from './queryLimits.js';

/**
 * What a rollout kind contributes to the API (ADR 0045): its resolvers (root fields, its object types, its fields of
 * shared types such as `RolloutStrategy`) and its ports to the shared root fields. Each kind's module satisfies it;
 * the composition root hands the registered ones to `buildSchema`, so GraphQL names no kind.
 */
export interface KindApi {
  readonly kind: RolloutKind;
  readonly resolvers: Resolvers;
  /** Its targets whose running version differs from what they should run (the `drift` query); none when not set up. */
  drift(domain: Domain): Promise<readonly DriftItem[]>;
  /** The current sizes of its lists that take no `first` (`Type.field` → size), for the cost estimate (listSizes.ts). */
  listSizes?(domain: Domain): ListSizes;
}
