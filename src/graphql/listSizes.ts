import { MAX_LISTED_VERSIONS } from '../domain/clusterFigures.js';
import { MAX_CLUSTER_LABELS } from '../domain/clusters/MemberClusterRegistry.js';
import type { Domain } from '../domain/Domain.js';
import { EventType, ROLLOUT_KINDS } from '../domain/events.js';
import { NOTIFIABLE_STATES, ONCE_PER_FIELDS } from '../domain/notifications/model.js';
import { MAX_FILTER_CLUSTERS, MAX_FILTER_ROLLOUTS } from '../domain/notifications/NotificationService.js';
import type { KindApi } from './kindApi.js';
import { MAX_WAVES } from '../domain/waves/plan.js';
import { MAX_GATE_DECISIONS } from '../domain/waves/StagedRuns.js';
import { MAX_WINDOW_POLICIES } from '../domain/gates/WindowPolicies.js';
import { MAX_ANALYSIS_STEPS } from '../domain/kinds/strategy.js';
import { MAX_ANALYSIS_TEMPLATES } from '../analysis/namedTemplates.js';
import { MAX_METRICS } from '../analysis/template.js';
import type { ListSizes } from './queryLimits.js';

/**
 * The real size of every list the schema returns without a `first` argument, for the cost estimate (queryLimits.ts).
 * Read just before the operation runs: the answer holds what is there now. A list missing here counts as
 * UNKNOWN_LIST_SIZE; test/graphql/listSizes.test.ts names the few left to it on purpose, so a new unbounded list
 * cannot slip in as 10. A rollout kind's lists are its own (`KindApi.listSizes`).
 */
export function listSizesOf(domain: Domain, kinds: readonly KindApi[]): ListSizes {
  return {
    ...Object.assign({}, ...kinds.map((kind) => kind.listSizes?.(domain) ?? {})),
    'Query.workQueues': () => domain.workQueues().length,
    // Every registered cluster is connected (the registry and the connections are reconciled by the sync).
    'Query.clusters': () => domain.clusters?.size() ?? 1,
    'MemberCluster.labels': () => MAX_CLUSTER_LABELS,
    'MemberCluster.kinds': () => ROLLOUT_KINDS.length,
    'MemberCluster.kindFigures': () => ROLLOUT_KINDS.length,
    'ClusterKindFigures.versions': () => MAX_LISTED_VERSIONS,
    'WorkQueueStatus.inFlight': () => Math.max(0, ...domain.workQueues().map((queue) => queue.inFlight.length)),
    'WorkQueueStatus.retries': () => Math.max(0, ...domain.workQueues().map((queue) => queue.retries.length)),
    // A subscription's filter lists, bounded by what the API accepts (domain/notifications/NotificationService.ts).
    'NotificationFilter.types': () => Object.keys(EventType).length,
    'NotificationFilter.kinds': () => ROLLOUT_KINDS.length,
    'NotificationFilter.clusters': () => MAX_FILTER_CLUSTERS,
    'NotificationFilter.states': () => NOTIFIABLE_STATES.length,
    'NotificationFilter.rolloutIds': () => MAX_FILTER_ROLLOUTS,
    'NotificationSubscription.oncePer': () => ONCE_PER_FIELDS.length,
    // Staged rollouts (issue 30): at most MAX_WAVES waves and a remainder, two gates each, the registered clusters.
    'WavePlan.waves': () => MAX_WAVES + 1,
    'WavePlan.excluded': () => domain.clusters?.size() ?? 1,
    'PlannedWave.clusters': () => domain.clusters?.size() ?? 1,
    // A staged run's two gates per wave, or a rollout's analyses between targets (ADR 0071), whichever can be more.
    'Rollout.gates': () => Math.max(2 * (MAX_WAVES + 1), MAX_ANALYSIS_STEPS),
    'TargetAnalysis.after': () => MAX_ANALYSIS_STEPS,
    'TargetGate.after': () => MAX_ANALYSIS_STEPS,
    'Query.analysisTemplates': () => MAX_ANALYSIS_TEMPLATES,
    'AnalysisTemplate.metrics': () => MAX_METRICS,
    'Gate.decisions': () => MAX_GATE_DECISIONS,
    'Query.maintenanceWindows': () => MAX_WINDOW_POLICIES,
  };
}
