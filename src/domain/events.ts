/** History event types and shapes. The domain's vocabulary; no GraphQL or Kubernetes types here. */
import { LOCAL_CLUSTER } from './clusters/model.js';
import type { EventPayload } from './eventPayloads.js';

export const EventType = {
  RolloutStateChanged: 'RolloutStateChanged',
  TargetStateChanged: 'TargetStateChanged',
  TargetFailed: 'TargetFailed',
  AgentRecreated: 'AgentRecreated',
  AgentForceDeleted: 'AgentForceDeleted',
  UpstreamControllerChanged: 'UpstreamControllerChanged',
  ClusterUpgradeObserved: 'ClusterUpgradeObserved',
  NodeAgentReplaced: 'NodeAgentReplaced',
  WaveStarted: 'WaveStarted',
  WaveFinished: 'WaveFinished',
  GateWaiting: 'GateWaiting',
  GateApproved: 'GateApproved',
  GateRejected: 'GateRejected',
  GateEnded: 'GateEnded',
  WindowClosed: 'WindowClosed',
  WindowOpened: 'WindowOpened',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

export type RolloutKind = 'AGENT_POOL' | 'NODE_AGENT' | 'VIRTUAL_CLUSTER';
export const ROLLOUT_KINDS: readonly RolloutKind[] = ['AGENT_POOL', 'NODE_AGENT', 'VIRTUAL_CLUSTER'];

/**
 * An event of type `T` about to be appended: its payload is what the type's schema says (eventPayloads.ts), checked at
 * compile time, so a wrong key or a missing field is an error at the writer (ADR 0042, 0046).
 */
export interface NewEventOf<T extends EventType> {
  type: T;
  rolloutId?: string | null;
  kind?: RolloutKind | null;
  namespace?: string | null;
  name?: string | null;
  /**
   * The member cluster of the object the event is about (ADR 0054). Absent: `local` when the event names an object
   * (`name`), none otherwise (see clusterOfEvent).
   */
  cluster?: string | null;
  payload: EventPayload<T>;
}

/** An event about to be appended: a union discriminated by `type` (narrowing on `type` gives its payload's type). */
export type NewEvent = { [T in EventType]: NewEventOf<T> }[EventType];

/** An event as stored: `id` increases monotonically and is the resume cursor. */
export interface StoredEvent {
  id: number;
  type: EventType;
  rolloutId: string | null;
  kind: RolloutKind | null;
  namespace: string | null;
  name: string | null;
  /**
   * The member cluster of the object the event is about; null for an event about no one object (ADR 0054). Every
   * event the stores return has it; absent (an event built by hand) reads as clusterOfEvent says.
   */
  cluster?: string | null;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/** Selects events; every given condition must hold. */
export interface EventFilter {
  types?: readonly EventType[];
  rolloutId?: string;
  kind?: RolloutKind;
  namespace?: string;
  name?: string;
  /** The member cluster of the object the event is about; absent: every cluster, or `local` when `name` is given. */
  cluster?: string;
  since?: Date;
}

export function matchesFilter(event: StoredEvent, filter: EventFilter): boolean {
  if (filter.types && filter.types.length > 0 && !filter.types.includes(event.type)) return false;
  if (filter.rolloutId !== undefined && event.rolloutId !== filter.rolloutId) return false;
  if (filter.kind !== undefined && event.kind !== filter.kind) return false;
  if (filter.namespace !== undefined && event.namespace !== filter.namespace) return false;
  if (filter.name !== undefined && event.name !== filter.name) return false;
  const cluster = clusterOfFilter(filter);
  if (cluster !== undefined && clusterOfEvent(event) !== cluster) return false;
  if (filter.since !== undefined && event.createdAt < filter.since) return false;
  return true;
}

/**
 * The cluster a filter reads (ADR 0060): the one it names; else `local` when it names an object (`name`), since an
 * object is in one cluster and `local`'s readers name none (ADR 0054: absent means local); else every cluster.
 */
export function clusterOfFilter(filter: EventFilter): string | undefined {
  return filter.cluster ?? (filter.name !== undefined ? LOCAL_CLUSTER : undefined);
}

/** The filter with the cluster it reads made explicit (clusterOfFilter): what the stores plan their reads from. */
export function withFilterCluster(filter: EventFilter): EventFilter {
  const cluster = clusterOfFilter(filter);
  return cluster === filter.cluster ? filter : { ...filter, cluster: cluster! };
}

/**
 * The cluster an event is stored with: the one it names, else `local` when it is about an object (every writer that
 * predates member clusters drove `local` only), else none (a rollout's own events: a rollout may span clusters).
 * The migration 20261208100000_cluster_key filled the events written before by the same rule.
 */
export function clusterOfEvent(event: { cluster?: string | null; name?: string | null }): string | null {
  if (event.cluster !== undefined) return event.cluster;
  return event.name != null ? LOCAL_CLUSTER : null;
}
