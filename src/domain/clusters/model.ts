import type { RolloutKind } from '../events.js';

/**
 * Member clusters (docs/adr/0048-member-clusters.md): the Kubernetes clusters rollplane drives. Named `MemberCluster`
 * everywhere so that it is never read as the CAPN `VirtualCluster` a virtual-cluster rollout upgrades.
 */

/** The cluster rollplane runs in, or the one its kubeconfig or the embedded simulator gives: registered at every start. */
export const LOCAL_CLUSTER = 'local';

/**
 * Where a registration comes from; only its source may change or remove it. LOCAL: the start itself. SECRET: a Secret
 * labelled `rollplane.io/member-cluster=true` in rollplane's namespace. CAPI: a Cluster API `<name>-kubeconfig` Secret.
 * FILE: the embedded mode's credentials file. API: `registerCluster` (admin), kept where ADR 0056 says (a Secret or the
 * credentials file, each marked as the API's).
 */
export const CLUSTER_SOURCES = ['LOCAL', 'SECRET', 'CAPI', 'FILE', 'API'] as const;
export type ClusterSource = (typeof CLUSTER_SOURCES)[number];

/**
 * CONNECTING: registered, not answered yet. READY: /version and discovery answered, its Kubernetes is supported.
 * DEGRADED: it answers, but the list of a kind it serves keeps failing: that kind is left out of `kinds` and the
 * message names it and the cause; its other kinds are driven (docs/adr/0066-member-kind-caches.md). UNREACHABLE: no
 * answer (refused, timed out, 5xx) since `since`. UNAUTHORIZED: it answered 401 or 403 to the credentials.
 * VERSION_SKEW: it answers, but its Kubernetes version is outside the supported window.
 */
export const CLUSTER_HEALTH_STATES = ['CONNECTING', 'READY', 'DEGRADED', 'UNREACHABLE', 'UNAUTHORIZED', 'VERSION_SKEW'] as const;
export type ClusterHealthState = (typeof CLUSTER_HEALTH_STATES)[number];

/** A member in this state answers and its `kinds` are driven (READY, or DEGRADED: some kind set aside). */
export function isDriven(state: ClusterHealthState): boolean {
  return state === 'READY' || state === 'DEGRADED';
}

export interface ClusterHealth {
  state: ClusterHealthState;
  /** When the cluster entered `state` (for UNREACHABLE: the first failed probe of the run of failures). */
  since: Date;
  /** Why, for people: an HTTP status or socket error code, never an address or a credential. */
  message: string | null;
  /** The API server's gitVersion once it answered /version. */
  serverVersion: string | null;
  /** The rollout kinds whose resources discovery found on the cluster. */
  kinds: RolloutKind[];
}

/** What a source registers: never a credential (those stay in memory, next to the connection). */
export interface ClusterRegistration {
  name: string;
  labels: Record<string, string>;
  source: ClusterSource;
  /** Where the credentials are: a Secret's `namespace/name` or the credentials file's path; '' for LOCAL. */
  sourceRef: string;
}

export interface MemberClusterRecord extends ClusterRegistration {
  createdAt: Date;
  updatedAt: Date;
  health: ClusterHealth;
}
