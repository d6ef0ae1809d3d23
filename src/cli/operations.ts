/** The GraphQL documents the CLI sends (schema.graphql is the contract) and the shapes it reads back. */

/** A rollout as lists show it (kept small: the server bounds a query's cost by page size times fields). */
export const ROLLOUT_SUMMARY_FIELDS = `
  id kind state fromVersion toVersion selector message idempotencyKey createdAt updatedAt startedAt finishedAt
  cause { actor runUrl commit message }
  strategy { maxUnavailable maxConcurrent canary progressDeadlineSeconds failureThreshold autoRollback mode minReadySeconds }
  progress { total pending progressing succeeded failed skipped cancelled percent }
`;

/** One rollout in full: the summary plus its first failed targets and their errors. */
export const ROLLOUT_FIELDS = `${ROLLOUT_SUMMARY_FIELDS}
  failedTargets: targets(state: FAILED, first: 10) { totalCount edges { node { namespace name error } } }
`;

export type RolloutState = 'PENDING' | 'PROGRESSING' | 'PAUSED' | 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'ROLLED_BACK';

export interface RolloutProgress {
  total: number;
  pending: number;
  progressing: number;
  succeeded: number;
  failed: number;
  skipped: number;
  cancelled: number;
  percent: number;
}

export interface RolloutView {
  id: string;
  kind: string;
  state: RolloutState;
  fromVersion: string | null;
  toVersion: string;
  selector: unknown;
  message: string | null;
  idempotencyKey: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  cause: { actor: string | null; runUrl: string | null; commit: string | null; message: string | null };
  strategy: Record<string, unknown>;
  progress: RolloutProgress;
  /** The first failed targets with their errors (what a CI log needs to explain a failure). */
  failedTargets?: { totalCount: number; edges: { node: { namespace: string; name: string; error: string | null } }[] };
}

export interface PlanItem {
  namespace: string;
  name: string;
  fromVersion: string | null;
  toVersion: string;
  action: string;
  reason: string | null;
}

export interface BumpPayload {
  rollout: RolloutView;
  plan: PlanItem[];
  created: boolean;
  dryRun: boolean;
}

const BUMP_FIELDS = `rollout { ${ROLLOUT_FIELDS} } plan { namespace name fromVersion toVersion action reason } created dryRun`;

export const BUMP_MUTATIONS = {
  bumpAgentImage: `mutation BumpAgentImage($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { ${BUMP_FIELDS} } }`,
  bumpNodeAgentImage: `mutation BumpNodeAgentImage($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { ${BUMP_FIELDS} } }`,
  bumpClusterVersion: `mutation BumpClusterVersion($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { ${BUMP_FIELDS} } }`,
} as const;
export type BumpMutation = keyof typeof BUMP_MUTATIONS;

export const ROLLOUT_QUERY = `query Rollout($id: ID!) { rollout(id: $id) { ${ROLLOUT_FIELDS} } }`;
export const LAST_EVENT_QUERY = `query LastEvent { serverInfo { lastEventId } }`;

export const PAUSE_MUTATION = `mutation Pause($id: ID!, $reason: String) { pauseRollout(id: $id, reason: $reason) { ${ROLLOUT_FIELDS} } }`;
export const RESUME_MUTATION = `mutation Resume($id: ID!) { resumeRollout(id: $id) { ${ROLLOUT_FIELDS} } }`;
export const ABORT_MUTATION = `mutation Abort($id: ID!, $reason: String) { abortRollout(id: $id, reason: $reason) { ${ROLLOUT_FIELDS} } }`;
export const ROLLBACK_MUTATION = `mutation Rollback($id: ID!, $input: RollbackInput) { rollbackRollout(id: $id, input: $input) { ${ROLLOUT_FIELDS} } }`;

export const HISTORY_QUERY = `query History($filter: RolloutFilter, $first: Int, $after: String) {
  rollouts(filter: $filter, first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { ${ROLLOUT_SUMMARY_FIELDS} } } }
}`;

/** Rollouts per history request; `--limit` beyond it is fetched page by page. */
export const HISTORY_PAGE_SIZE = 20;

export const ROLLOUT_UPDATED_SUBSCRIPTION = `subscription Follow($id: ID!, $after: ID) {
  rolloutUpdated(filter: { rolloutId: $id }, after: $after) { event { id type } rollout { ${ROLLOUT_FIELDS} } }
}`;

export interface RolloutUpdate {
  event: { id: string; type: string };
  rollout: RolloutView;
}

const TOKEN_FIELDS = 'id name role createdAt expiresAt revokedAt lastUsedAt';

export interface ApiTokenView {
  id: string;
  name: string;
  role: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export const CREATE_TOKEN_MUTATION = `mutation CreateToken($input: CreateApiTokenInput!) { createApiToken(input: $input) { secret token { ${TOKEN_FIELDS} } } }`;
export const REVOKE_TOKEN_MUTATION = `mutation RevokeToken($id: ID!) { revokeApiToken(id: $id) { ${TOKEN_FIELDS} } }`;
export const TOKENS_QUERY = `query Tokens($first: Int, $after: String) { apiTokens(first: $first, after: $after) { edges { node { ${TOKEN_FIELDS} } } pageInfo { hasNextPage endCursor } } }`;

export const TERMINAL_STATES: readonly RolloutState[] = ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'];
export const isTerminalState = (state: RolloutState): boolean => TERMINAL_STATES.includes(state);
