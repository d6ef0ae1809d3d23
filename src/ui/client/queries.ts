/**
 * Every GraphQL document the shared UI sends, under the names the views import (each kind's are in its
 * src/kinds/<kind>/ui/queries.ts). The documents live in queries.graphql; their result and variables types are
 * generated from schema.graphql into generated/graphql.ts (scripts/codegen.mjs), so that a schema change that breaks the
 * UI fails `tsc -p src/ui/client/tsconfig.json`.
 */
export {
  AbortDocument as ABORT,
  DriftDocument as DRIFT,
  EventsDocument as EVENTS,
  PauseDocument as PAUSE,
  ResumeDocument as RESUME,
  RollbackDocument as ROLLBACK,
  RolloutDetailDocument as ROLLOUT_DETAIL,
  RolloutEventsDocument as ROLLOUT_EVENTS,
  RolloutTargetsDocument as ROLLOUT_TARGETS,
  RolloutUpdatedDocument as SUB_ROLLOUT_UPDATED,
  RolloutsDocument as ROLLOUTS,
  ServerInfoDocument as SERVER_INFO,
} from './generated/graphql.js';
