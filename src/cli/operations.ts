/**
 * The GraphQL documents the CLI sends and the shapes it reads back. The documents live in operations.graphql (each
 * kind's bump mutation and part of the fleet query in its cli.graphql); their result and variables types are generated
 * from schema.graphql into generated/graphql.ts (scripts/codegen.mjs), so a schema change that breaks the CLI fails the
 * type check instead of a CI run. Nothing here declares a response by hand.
 */
import type {
  ApiTokenFieldsFragment,
  MemberClusterFieldsFragment,
  BumpResultFragment,
  FollowSubscription,
  RolloutFullFragment,
  RolloutState,
  RolloutSummaryFragment,
  RolloutTargetsQuery,
} from './generated/graphql.js';

export {
  AbortDocument as ABORT_MUTATION,
  ApproveGateDocument as APPROVE_GATE_MUTATION,
  AnalysisTemplatesDocument as ANALYSIS_TEMPLATES_QUERY,
  CreateAnalysisTemplateDocument as CREATE_ANALYSIS_TEMPLATE_MUTATION,
  DeleteAnalysisTemplateDocument as DELETE_ANALYSIS_TEMPLATE_MUTATION,
  UpdateAnalysisTemplateDocument as UPDATE_ANALYSIS_TEMPLATE_MUTATION,
  CreateMaintenanceWindowDocument as CREATE_WINDOW_MUTATION,
  DeleteMaintenanceWindowDocument as DELETE_WINDOW_MUTATION,
  MaintenanceWindowsDocument as WINDOWS_QUERY,
  UpdateMaintenanceWindowDocument as UPDATE_WINDOW_MUTATION,
  RejectGateDocument as REJECT_GATE_MUTATION,
  RetryGateDocument as RETRY_GATE_MUTATION,
  GateMeasurementsDocument as GATE_MEASUREMENTS_QUERY,
  ClustersDocument as CLUSTERS_QUERY,
  DeregisterClusterDocument as DEREGISTER_CLUSTER_MUTATION,
  RegisterClusterDocument as REGISTER_CLUSTER_MUTATION,
  UpdateClusterLabelsDocument as UPDATE_CLUSTER_LABELS_MUTATION,
  CreateTokenDocument as CREATE_TOKEN_MUTATION,
  FollowDocument as ROLLOUT_UPDATED_SUBSCRIPTION,
  HistoryDocument as HISTORY_QUERY,
  LastEventDocument as LAST_EVENT_QUERY,
  PauseDocument as PAUSE_MUTATION,
  ResumeDocument as RESUME_MUTATION,
  RevokeTokenDocument as REVOKE_TOKEN_MUTATION,
  RollbackDocument as ROLLBACK_MUTATION,
  RolloutDocument as ROLLOUT_QUERY,
  RolloutTargetsDocument as ROLLOUT_TARGETS_QUERY,
  DriftDocument as DRIFT_QUERY,
  TokensDocument as TOKENS_QUERY,
} from './generated/graphql.js';
export type { RolloutState } from './generated/graphql.js';

/**
 * A rollout as the CLI reads it: lists select the summary, single-rollout requests the full fragment, which adds the
 * first failed targets with their errors (what a CI log needs to explain a failure).
 */
export type RolloutView = RolloutSummaryFragment &
  Partial<Pick<RolloutFullFragment, 'failedTargets' | 'inFlight'>> & {
    /** What a PROGRESSING rollout waits for, where it was asked (`rollout status`). */
    waitingFor?: string | null;
  };
export type RolloutProgress = RolloutSummaryFragment['progress'];
export type BumpPayload = BumpResultFragment;
/** A plan's target; `cluster` may be absent in an older server's answer (it is then `local`). */
export type PlanItem = Omit<BumpResultFragment['plan'][number], 'cluster'> & { cluster?: string };
export type RolloutUpdate = FollowSubscription['rolloutUpdated'];
export type RolloutEvent = RolloutUpdate['event'];
export type ApiTokenView = ApiTokenFieldsFragment;
export type TargetView = NonNullable<RolloutTargetsQuery['rollout']>['targets']['edges'][number]['node'];
export type MemberClusterView = MemberClusterFieldsFragment;

/** Rollouts per history request; `--limit` beyond it is fetched page by page. */
export const HISTORY_PAGE_SIZE = 20;

export const TERMINAL_STATES: readonly RolloutState[] = ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'];
export const isTerminalState = (state: RolloutState): boolean => TERMINAL_STATES.includes(state);
