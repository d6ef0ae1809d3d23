/**
 * Every GraphQL document the UI sends, under the names the views import. The documents live in queries.graphql; their
 * result and variables types are generated from schema.graphql into generated/graphql.ts (scripts/codegen.mjs), so a
 * schema change that breaks the UI fails `tsc -p src/ui/client/tsconfig.json`.
 */
export {
  AbortDocument as ABORT,
  AgentPoolsDocument as AGENT_POOLS,
  AgentRecreatedDocument as SUB_AGENT_RECREATED,
  ClusterUpgradeObservedDocument as SUB_CLUSTER_UPGRADE_OBSERVED,
  ClusterVersionsDocument as CLUSTER_VERSIONS,
  DriftDocument as DRIFT,
  EventsDocument as EVENTS,
  NodeAgentReplacedDocument as SUB_NODE_AGENT_REPLACED,
  NodeAgentSetsDocument as NODE_AGENT_SETS,
  PauseDocument as PAUSE,
  ResumeDocument as RESUME,
  RollbackDocument as ROLLBACK,
  RolloutDetailDocument as ROLLOUT_DETAIL,
  RolloutEventsDocument as ROLLOUT_EVENTS,
  RolloutTargetsDocument as ROLLOUT_TARGETS,
  RolloutUpdatedDocument as SUB_ROLLOUT_UPDATED,
  RolloutsDocument as ROLLOUTS,
  ServerInfoDocument as SERVER_INFO,
  UpgradeDurationsDocument as UPGRADE_DURATIONS,
  VirtualClustersDocument as VIRTUAL_CLUSTERS,
} from './generated/graphql.js';
