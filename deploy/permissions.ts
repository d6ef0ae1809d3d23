/**
 * Every Kubernetes permission rollplane's service account needs, and why: the single table that `rbac.yaml` is written
 * from. test/deploy/rbac.test.ts checks both directions — the ClusterRole and the leader-election Role grant exactly
 * these, and the reconcilers' code (client-node calls and informer paths under src/controller and src/controllers)
 * uses exactly these, apart from the calls listed in NOT_GRANTED. Add a row here, then to rbac.yaml, when the code
 * starts a new call.
 */

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export interface Permission {
  /** API group; '' is the core group. */
  group: string;
  /** Plural resource, `plural/subresource` for a subresource. */
  resource: string;
  verbs: readonly Verb[];
  /** `cluster`: the ClusterRole; `lease-namespace`: the Role in rollplane-system (leader election, API-registered member clusters). */
  scope: 'cluster' | 'lease-namespace';
  why: string;
}

export const PERMISSIONS: readonly Permission[] = [
  // Agent pools (harvester/vm-dhcp-controller): IPPools, their agent Pods, the vm-dhcp-controller Deployment, NADs, nodes.
  {
    group: 'network.harvesterhci.io',
    resource: 'ippools',
    verbs: ['get', 'list', 'watch', 'patch'],
    scope: 'cluster',
    why: 'informer; a fresh read when an admission meets a conflict; the hold annotation (coexistence)',
  },
  {
    group: 'network.harvesterhci.io',
    resource: 'ippools/status',
    verbs: ['update'],
    scope: 'cluster',
    why: 'direct mode only: status.agentPodRef (the image the rollout admits) and conditions',
  },
  {
    group: 'k8s.cni.cncf.io',
    resource: 'network-attachment-definitions',
    verbs: ['list', 'watch'],
    scope: 'cluster',
    why: 'informer: the cluster network of each pool',
  },
  { group: '', resource: 'nodes', verbs: ['list', 'watch'], scope: 'cluster', why: 'informers: agent placement, node-agent eligibility' },
  {
    group: '',
    resource: 'pods',
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    scope: 'cluster',
    why: 'agent pods (create/recreate), node agents (retire, replace), stuck control-plane pods',
  },
  { group: '', resource: 'pods/status', verbs: ['patch'], scope: 'cluster', why: 'node agents: the peer-pod readiness gate condition' },
  {
    group: 'apps',
    resource: 'deployments',
    verbs: ['get', 'list', 'watch', 'patch'],
    scope: 'cluster',
    why: 'the vm-dhcp-controller Deployment: found by its chart labels, its --image argument set by coexistence rollouts (read first: the write lands only on that version, ImageWriteFence)',
  },
  {
    group: 'harvesterhci.io',
    resource: 'addons',
    verbs: ['get', 'patch'],
    scope: 'cluster',
    why: 'the Harvester Addon that owns the vm-dhcp-controller: the agent image is set in its valuesContent (ADR 32)',
  },
  // Node agents (cloud-api-adaptor): the DaemonSet's template and update strategy.
  {
    group: 'apps',
    resource: 'daemonsets',
    verbs: ['get', 'list', 'watch', 'patch'],
    scope: 'cluster',
    why: 'node-agent DaemonSets: image and OnDelete strategy during a rollout',
  },
  {
    group: '',
    resource: 'configmaps',
    verbs: ['get'],
    scope: 'cluster',
    why: "node agents: RUNTIMECLASS_NAME as the agent container sees it (the CAA's peer-pods-cm, through envFrom/configMapKeyRef)",
  },
  // Virtual clusters (cluster-api-provider-nested): VirtualClusters, ClusterVersions and the tenant control planes.
  {
    group: 'tenancy.x-k8s.io',
    resource: 'virtualclusters',
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
    scope: 'cluster',
    why: 'opt-in label, cert-hash annotations, phase',
  },
  {
    group: 'tenancy.x-k8s.io',
    resource: 'clusterversions',
    verbs: ['get', 'list', 'watch', 'patch'],
    scope: 'cluster',
    why: 'server-side apply of the bumped spec',
  },
  {
    group: 'apps',
    resource: 'statefulsets',
    verbs: ['list', 'watch', 'patch'],
    scope: 'cluster',
    why: 'apiserver and controller-manager StatefulSets (server-side apply)',
  },
  { group: '', resource: 'services', verbs: ['patch'], scope: 'cluster', why: 'apiserver Service (server-side apply)' },
  {
    group: '',
    resource: 'secrets',
    verbs: ['list', 'patch'],
    scope: 'cluster',
    why: 'tenant PKI and kubeconfig Secrets: one list per control-plane namespace, server-side apply',
  },
  // Leader election, only in rollplane's own namespace.
  {
    group: 'coordination.k8s.io',
    resource: 'leases',
    verbs: ['get', 'list', 'create', 'update', 'delete'],
    scope: 'lease-namespace',
    why: "the leader Lease, the member clusters' shard Leases and each replica's presence Lease (listed to count the live replicas, deleted when it stops; docs/adr/0059-shard-leases.md)",
  },
  // Member clusters registered through the API keep their kubeconfig in a Secret of rollplane's namespace (ADR 0056).
  {
    group: '',
    resource: 'secrets',
    verbs: ['get', 'create', 'update', 'delete'],
    scope: 'lease-namespace',
    why: "registerCluster / updateClusterLabels / deregisterCluster: one Secret per API-registered member cluster, in rollplane's namespace only",
  },
];

/** Calls the code makes that the manifests deliberately do not allow, and how rollplane copes without them. */
export const NOT_GRANTED: readonly { group: string; resource: string; verb: Verb; why: string }[] = [
  {
    group: '',
    resource: 'namespaces',
    verb: 'create',
    why: 'the controller Manager tries to create the Lease namespace and ignores a refusal; namespace.yaml creates rollplane-system instead of granting cluster-wide namespace creation',
  },
];

/** The namespace rollplane runs in and keeps its Lease in (ROLLPLANE_LEASE_NAMESPACE's default). */
export const ROLLPLANE_NAMESPACE = 'rollplane-system';
