/** Every GraphQL document the UI sends, in one place, so that a schema change shows up here. */

export const PROGRESS_FIELDS = 'progress { total pending progressing succeeded failed skipped cancelled percent }';
export const ROLLOUT_FIELDS = `id kind state fromVersion toVersion message createdAt updatedAt finishedAt
  cause { actor commit runUrl message } ${PROGRESS_FIELDS}`;

export const SERVER_INFO = `query ServerInfo { serverInfo { version kubeMode startedAt lastEventId } }`;

export const ROLLOUTS = `query Rollouts($filter: RolloutFilter, $first: Int, $after: String) {
  rollouts(filter: $filter, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor } edges { node { ${ROLLOUT_FIELDS} } }
  }
}`;

export const ROLLOUT_DETAIL = `query RolloutDetail($id: ID!) {
  rollout(id: $id) {
    ${ROLLOUT_FIELDS} startedAt selector idempotencyKey rollbackOf { id }
    strategy { maxUnavailable maxConcurrent canary progressDeadlineSeconds failureThreshold autoRollback mode minReadySeconds }
  }
}`;

export const ROLLOUT_TARGETS = `query RolloutTargets($id: ID!, $state: TargetState, $first: Int, $after: String) {
  rollout(id: $id) {
    id
    targets(state: $state, first: $first, after: $after) {
      totalCount pageInfo { hasNextPage endCursor }
      edges { node { id namespace name ordinal state fromVersion toVersion attempts skipReason error admittedAt finishedAt durationSeconds } }
    }
  }
}`;

const EVENT_FIELDS = 'id type rolloutId object { kind namespace name } payload createdAt';

export const EVENTS = `query Events($filter: EventFilter, $first: Int, $after: String) {
  events(filter: $filter, first: $first, after: $after) { pageInfo { hasNextPage endCursor } edges { node { ${EVENT_FIELDS} } } }
}`;

export const ROLLOUT_EVENTS = `query RolloutEvents($id: ID!, $first: Int, $after: String) {
  rollout(id: $id) { id events(first: $first, after: $after) { pageInfo { hasNextPage endCursor } edges { node { ${EVENT_FIELDS} } } } }
}`;

export const PAUSE = `mutation Pause($id: ID!, $reason: String) { pauseRollout(id: $id, reason: $reason) { ${ROLLOUT_FIELDS} } }`;
export const RESUME = `mutation Resume($id: ID!) { resumeRollout(id: $id) { ${ROLLOUT_FIELDS} } }`;
export const ABORT = `mutation Abort($id: ID!, $reason: String) { abortRollout(id: $id, reason: $reason) { ${ROLLOUT_FIELDS} } }`;
export const ROLLBACK = `mutation Rollback($id: ID!, $input: RollbackInput) { rollbackRollout(id: $id, input: $input) { ${ROLLOUT_FIELDS} } }`;

export const AGENT_POOLS = `query AgentPools($filter: AgentPoolFilter, $first: Int, $after: String) {
  agentPools(filter: $filter, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { namespace name mode desiredImage runningImage agentReady held paused } }
  }
}`;

export const VIRTUAL_CLUSTERS = `query VirtualClusters($filter: VirtualClusterFilter, $first: Int, $after: String) {
  virtualClusters(filter: $filter, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { namespace name clusterVersionName phase appliedResourceVersion upToDate readyForUpgrade } }
  }
}`;

export const CLUSTER_VERSIONS = `query ClusterVersions($first: Int, $after: String) {
  clusterVersions(first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { name resourceVersion apiServerImage controllerManagerImage clusterCount behindCount } }
  }
}`;

export const NODE_AGENT_SETS = `query NodeAgentSets($first: Int, $after: String) {
  nodeAgentSets(first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { namespace name desiredImage peerRuntimeClass nodes { node image ready upToDate peerPods peerPodsReady } } }
  }
}`;

export const DRIFT = `query Drift($kind: RolloutKind, $first: Int, $after: String) {
  drift(kind: $kind, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { kind namespace name desiredVersion runningVersion since } }
  }
}`;

export const UPGRADE_DURATIONS = `query UpgradeDurations { clusterUpgradeDurations { clusterVersion count failed p50Seconds p95Seconds maxSeconds } }`;

export const SUB_ROLLOUT_UPDATED = `subscription RolloutUpdated($after: ID) {
  rolloutUpdated(after: $after) { event { id type object { namespace name } payload } rollout { ${ROLLOUT_FIELDS} } }
}`;

export const SUB_AGENT_RECREATED = `subscription AgentRecreated($after: ID) {
  agentRecreated(after: $after) { eventId rolloutId poolNamespace poolName oldImage newImage reason readyAt seconds }
}`;

export const SUB_CLUSTER_UPGRADE_OBSERVED = `subscription ClusterUpgradeObserved($after: ID) {
  clusterUpgradeObserved(after: $after) {
    eventId rolloutId clusterNamespace clusterName clusterVersion resourceVersion seconds outcome error observedAt
  }
}`;

export const SUB_NODE_AGENT_REPLACED = `subscription NodeAgentReplaced($after: ID) {
  events(filter: { types: [NodeAgentReplaced] }, after: $after) { id type rolloutId object { namespace name } payload createdAt }
}`;
