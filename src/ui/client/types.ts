/** The API shapes the UI selects: aliases of the generated types (see queries.graphql), plus the UI's own view rows. */
import type {
  AgentRecreationFragment,
  EventType,
  HistoryEventFragment,
  PageFieldsFragment,
  ProgressFieldsFragment,
  RolloutItemFragment,
  RolloutKind,
  RolloutState,
  TargetRowFragment,
  TargetState,
  UpgradeObservationFragment,
} from './generated/graphql.js';

export type { RolloutKind, RolloutState, TargetState } from './generated/graphql.js';

export const ROLLOUT_KINDS: readonly RolloutKind[] = ['AGENT_POOL', 'VIRTUAL_CLUSTER', 'NODE_AGENT'];
export const ROLLOUT_STATES: readonly RolloutState[] = ['PENDING', 'PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'];
export const ACTIVE_STATES: readonly RolloutState[] = ['PENDING', 'PROGRESSING', 'PAUSED'];
export const TARGET_STATES: readonly TargetState[] = ['PENDING', 'PROGRESSING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'];
export const EVENT_TYPES: readonly EventType[] = [
  'RolloutStateChanged',
  'TargetStateChanged',
  'TargetFailed',
  'AgentRecreated',
  'AgentForceDeleted',
  'UpstreamControllerChanged',
  'ClusterUpgradeObserved',
  'NodeAgentReplaced',
];

/** Response shapes, generated from the fragments in queries.graphql (never written by hand). */
export type PageInfo = PageFieldsFragment;
export type Progress = ProgressFieldsFragment;
export type RolloutSummary = RolloutItemFragment;
export type RolloutTarget = TargetRowFragment;
export type HistoryEvent = HistoryEventFragment;
export type AgentRecreation = AgentRecreationFragment;
export type UpgradeObservation = UpgradeObservationFragment;

/** An event's payload as an object: the schema types it JSON, and every event rollplane writes has an object. */
export function payloadOf(event: { payload: unknown }): Readonly<Record<string, unknown>> {
  return isRecord(event.payload) ? event.payload : {};
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

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
