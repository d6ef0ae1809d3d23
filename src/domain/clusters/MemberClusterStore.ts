import type { ClusterHealth, ClusterRegistration, ClusterSource, MemberClusterRecord } from './model.js';

/** What `put` did: created or changed the row, found it as asked, or found the name registered by another source. */
export type PutOutcome = { outcome: 'created' | 'updated' | 'unchanged'; record: MemberClusterRecord } | { outcome: 'taken'; record: MemberClusterRecord };

/**
 * The member cluster registry's persistence port (prisma/models/clusters.prisma). The domain owns it; src/store
 * implements it on SQLite and PostgreSQL (test/store/memberClusterContract.ts runs over both).
 */
export interface MemberClusterStore {
  /** Every registered cluster, by name. */
  list(): Promise<MemberClusterRecord[]>;
  find(name: string): Promise<MemberClusterRecord | undefined>;
  /**
   * Registers `registration`, or changes the labels and sourceRef of the row of that name when the same source owns it
   * (one statement: two replicas registering the same Secret at once both succeed, one of them 'unchanged'). A row of
   * another source is left alone ('taken'). A new row's health is CONNECTING since `now`.
   */
  put(registration: ClusterRegistration, now: Date): Promise<PutOutcome>;
  /** Registers `registration` unless the name is registered (any source); true when it did. */
  putIfAbsent(registration: ClusterRegistration, now: Date): Promise<boolean>;
  /** Removes the row when `source` owns it; true when it did. */
  remove(name: string, source: ClusterSource): Promise<boolean>;
  /**
   * Writes the cluster's health (not its `updatedAt`: that is the registration's); false when it is not registered, or
   * when `onlyIf` is given and the recorded state is another one by then (checked in the same statement).
   */
  recordHealth(name: string, health: ClusterHealth, onlyIf?: ClusterHealth['state']): Promise<boolean>;
}
