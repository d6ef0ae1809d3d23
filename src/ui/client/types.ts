/** The API shapes the UI selects (see schema.graphql); only the fields the queries in this folder ask for. */

export type RolloutKind = 'AGENT_POOL' | 'NODE_AGENT' | 'VIRTUAL_CLUSTER';
export type RolloutState = 'PENDING' | 'PROGRESSING' | 'PAUSED' | 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'ROLLED_BACK';
export type TargetState = 'PENDING' | 'PROGRESSING' | 'SUCCEEDED' | 'FAILED' | 'SKIPPED' | 'CANCELLED';

export const ROLLOUT_KINDS: readonly RolloutKind[] = ['AGENT_POOL', 'VIRTUAL_CLUSTER', 'NODE_AGENT'];
export const ROLLOUT_STATES: readonly RolloutState[] = ['PENDING', 'PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'];
export const ACTIVE_STATES: readonly RolloutState[] = ['PENDING', 'PROGRESSING', 'PAUSED'];
export const TARGET_STATES: readonly TargetState[] = ['PENDING', 'PROGRESSING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'];
export const EVENT_TYPES = [
  'RolloutStateChanged',
  'TargetStateChanged',
  'TargetFailed',
  'AgentRecreated',
  'AgentForceDeleted',
  'UpstreamControllerChanged',
  'ClusterUpgradeObserved',
  'NodeAgentReplaced',
] as const;

export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

export interface Progress {
  total: number;
  pending: number;
  progressing: number;
  succeeded: number;
  failed: number;
  skipped: number;
  cancelled: number;
  percent: number;
}

export interface RolloutSummary {
  id: string;
  kind: RolloutKind;
  state: RolloutState;
  fromVersion: string | null;
  toVersion: string;
  message: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  cause: { actor: string | null; commit: string | null; runUrl: string | null; message: string | null };
  progress: Progress;
}

export interface RolloutTarget {
  id: string;
  namespace: string;
  name: string;
  ordinal: number;
  state: TargetState;
  fromVersion: string | null;
  toVersion: string;
  attempts: number;
  skipReason: string | null;
  error: string | null;
  admittedAt: string | null;
  finishedAt: string | null;
  durationSeconds: number | null;
}

export interface HistoryEvent {
  id: string;
  type: string;
  rolloutId: string | null;
  object: { kind: RolloutKind | null; namespace: string; name: string } | null;
  payload: Record<string, unknown>;
  createdAt: string;
}

export interface AgentRecreation {
  eventId: string;
  rolloutId: string | null;
  poolNamespace: string;
  poolName: string;
  oldImage: string | null;
  newImage: string;
  reason: string;
  readyAt: string | null;
  seconds: number | null;
}

export interface UpgradeObservation {
  eventId: string;
  rolloutId: string | null;
  clusterNamespace: string;
  clusterName: string;
  clusterVersion: string;
  resourceVersion: string;
  seconds: number;
  outcome: 'SUCCEEDED' | 'FAILED' | 'ALREADY_APPLIED';
  error: string | null;
  observedAt: string;
}

/** A node's agent replaced by a node-agent rollout (the NodeAgentReplaced event's payload). */
export interface NodeAgentReplacement {
  eventId: string;
  rolloutId: string | null;
  node: string;
  daemonSet: string | null;
  oldImage: string | null;
  newImage: string | null;
  peerPodsRestarted: number | null;
  seconds: number | null;
  at: string;
}

/** One row of the live feed, ordered by event id. */
export type FeedRow =
  | { kind: 'agent'; id: number; at: string; item: AgentRecreation }
  | { kind: 'node'; id: number; at: string; item: NodeAgentReplacement }
  | { kind: 'cluster'; id: number; at: string; item: UpgradeObservation };
