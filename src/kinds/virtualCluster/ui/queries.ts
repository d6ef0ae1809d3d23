/** The virtual clusters' UI documents (queries.graphql here), typed by codegen in the shared UI's generated module. */
export {
  ClusterUpgradeObservedDocument as SUB_CLUSTER_UPGRADE_OBSERVED,
  ClusterVersionsDocument as CLUSTER_VERSIONS,
  UpgradeDurationsDocument as UPGRADE_DURATIONS,
  VirtualClustersDocument as VIRTUAL_CLUSTERS,
} from '../../../ui/client/generated/graphql.js';
export type { UpgradeObservationFragment as UpgradeObservation } from '../../../ui/client/generated/graphql.js';
