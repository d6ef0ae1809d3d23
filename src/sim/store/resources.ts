import type { ResourceType } from '../types.js';

/**
 * The resource types the simulator serves. The registry is the single source for discovery, OpenAPI, routing and the
 * store's type lookups; objects returned here are frozen and shared.
 */
function rt(
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced: boolean,
  subresources: string[] = [],
  shortNames?: string[],
  custom = false,
): ResourceType {
  const type: ResourceType = { group, version, plural, kind, namespaced, subresources };
  if (shortNames) type.shortNames = shortNames;
  if (custom) type.custom = true;
  return Object.freeze(type);
}

const STATUS = ['status'];
const STATUS_SCALE = ['status', 'scale'];

/** Named handles for the built-in types, so in-process code never spells group/plural strings. */
export const Resources = Object.freeze({
  namespaces: rt('', 'v1', 'namespaces', 'Namespace', false, STATUS, ['ns']),
  nodes: rt('', 'v1', 'nodes', 'Node', false, STATUS, ['no']),
  pods: rt('', 'v1', 'pods', 'Pod', true, ['status', 'log'], ['po']),
  services: rt('', 'v1', 'services', 'Service', true, STATUS, ['svc']),
  secrets: rt('', 'v1', 'secrets', 'Secret', true),
  configmaps: rt('', 'v1', 'configmaps', 'ConfigMap', true, [], ['cm']),
  events: rt('', 'v1', 'events', 'Event', true, [], ['ev']),
  serviceaccounts: rt('', 'v1', 'serviceaccounts', 'ServiceAccount', true, [], ['sa']),
  leases: rt('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
  deployments: rt('apps', 'v1', 'deployments', 'Deployment', true, STATUS_SCALE, ['deploy']),
  replicasets: rt('apps', 'v1', 'replicasets', 'ReplicaSet', true, STATUS_SCALE, ['rs']),
  daemonsets: rt('apps', 'v1', 'daemonsets', 'DaemonSet', true, STATUS, ['ds']),
  statefulsets: rt('apps', 'v1', 'statefulsets', 'StatefulSet', true, STATUS_SCALE, ['sts']),
  controllerrevisions: rt('apps', 'v1', 'controllerrevisions', 'ControllerRevision', true),
  networkAttachmentDefinitions: rt(
    'k8s.cni.cncf.io',
    'v1',
    'network-attachment-definitions',
    'NetworkAttachmentDefinition',
    true,
    [],
    ['nad', 'net-attach-def'],
    true,
  ),
  ippools: rt('network.harvesterhci.io', 'v1alpha1', 'ippools', 'IPPool', true, STATUS, ['ippl', 'ippls'], true),
  virtualclusters: rt('tenancy.x-k8s.io', 'v1alpha1', 'virtualclusters', 'VirtualCluster', true, [], ['vc'], true),
  clusterversions: rt('tenancy.x-k8s.io', 'v1alpha1', 'clusterversions', 'ClusterVersion', false, [], ['cv'], true),
  roles: rt('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true),
  rolebindings: rt('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true),
  clusterroles: rt('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  clusterrolebindings: rt('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  servicemonitors: rt('monitoring.coreos.com', 'v1', 'servicemonitors', 'ServiceMonitor', true),
  // Stored but not acted on: so that deployment manifests (deploy/) apply cleanly.
  persistentvolumeclaims: rt('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true, STATUS, ['pvc']),
  jobs: rt('batch', 'v1', 'jobs', 'Job', true, STATUS),
  poddisruptionbudgets: rt('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', true, STATUS, ['pdb']),
  networkpolicies: rt('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', true, [], ['netpol']),
  ingresses: rt('networking.k8s.io', 'v1', 'ingresses', 'Ingress', true, STATUS, ['ing']),
  prometheusrules: rt('monitoring.coreos.com', 'v1', 'prometheusrules', 'PrometheusRule', true),
  customresourcedefinitions: rt('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false, STATUS, ['crd', 'crds']),
});

/**
 * The types served from the start. The custom resources among the handles above (IPPool, VirtualCluster,
 * ClusterVersion, NetworkAttachmentDefinition) are served only while their CustomResourceDefinition is installed
 * (src/sim/crds): the handles stay usable by in-process code, and the store refuses them (404) without the CRD.
 */
export const BUILT_IN_TYPES: readonly ResourceType[] = Object.freeze(Object.values(Resources).filter((t) => !t.custom));

/** "apps/v1" for a grouped type, "v1" for the core group. */
export function apiVersionOf(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

/** Key used for maps of types: group and plural identify a type (one served version per group here). */
export function typeKey(type: ResourceType): string {
  return `${type.group}/${type.plural}`;
}

export function hasStatus(type: ResourceType): boolean {
  return type.subresources.includes('status');
}

/** Lookup tables over the served types; CustomResourceDefinitions add and remove types while the store runs. */
export class ResourceRegistry {
  private readonly byKey = new Map<string, ResourceType>();
  private readonly byKind = new Map<string, ResourceType>();
  private list: ResourceType[] = [];
  /** Bumped on every change, so that documents derived from the types (OpenAPI) can be cached until then. */
  generation = 0;

  constructor(types: readonly ResourceType[] = BUILT_IN_TYPES) {
    for (const type of types) this.add(type);
  }

  get types(): readonly ResourceType[] {
    return this.list;
  }

  /** Adds a type, or replaces the one with the same group and plural (a CRD changed). */
  add(type: ResourceType): void {
    const previous = this.byKey.get(typeKey(type));
    if (previous) this.byKind.delete(`${apiVersionOf(previous)}/${previous.kind}`);
    this.byKey.set(typeKey(type), type);
    this.byKind.set(`${apiVersionOf(type)}/${type.kind}`, type);
    this.list = previous ? this.list.map((t) => (t === previous ? type : t)) : [...this.list, type];
    this.generation++;
  }

  remove(type: ResourceType): void {
    const previous = this.byKey.get(typeKey(type));
    if (!previous) return;
    this.byKey.delete(typeKey(type));
    this.byKind.delete(`${apiVersionOf(previous)}/${previous.kind}`);
    this.list = this.list.filter((t) => t !== previous);
    this.generation++;
  }

  byGroupPlural(group: string, plural: string): ResourceType | undefined {
    return this.byKey.get(`${group}/${plural}`);
  }

  byApiVersionKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.byKind.get(`${apiVersion}/${kind}`);
  }

  /** Group → versions served, in registration order; the core group is ''. */
  groups(): Map<string, string[]> {
    const groups = new Map<string, string[]>();
    for (const type of this.types) {
      const versions = groups.get(type.group) ?? [];
      if (!versions.includes(type.version)) versions.push(type.version);
      groups.set(type.group, versions);
    }
    return groups;
  }

  inGroupVersion(group: string, version: string): ResourceType[] {
    return this.types.filter((t) => t.group === group && t.version === version);
  }
}
