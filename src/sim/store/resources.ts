import { byVersionPriority } from '../crd/versionOrder.js';
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
  // Called on every write they match (src/sim/admission/webhooks.ts).
  validatingwebhookconfigurations: rt('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', false),
  // Stored but not called: the simulator models validating webhooks only.
  mutatingwebhookconfigurations: rt('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', false),
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

/** Key used for maps of types: group and plural identify a type, whichever of its versions is requested. */
export function typeKey(type: ResourceType): string {
  return `${type.group}/${type.plural}`;
}

export function hasStatus(type: ResourceType): boolean {
  return type.subresources.includes('status');
}

/**
 * Lookup tables over the served types; CustomResourceDefinitions add and remove types while the store runs. A CRD
 * serves one type per served version (same group and plural); `byGroupPlural` answers its storage version, the one
 * in-process code and the store's events use.
 */
export class ResourceRegistry {
  /** group/plural → the type in-process code uses (a CRD's storage version, served or not). */
  private readonly byKey = new Map<string, ResourceType>();
  /** group/version/plural → a served type. */
  private readonly byVersion = new Map<string, ResourceType>();
  private readonly byKind = new Map<string, ResourceType>();
  /** group/plural → its served types. */
  private readonly served = new Map<string, readonly ResourceType[]>();
  private list: ResourceType[] = [];
  /** Bumped on every change, so that documents derived from the types (OpenAPI) can be cached until then. */
  generation = 0;

  constructor(types: readonly ResourceType[] = BUILT_IN_TYPES) {
    for (const type of types) this.add(type);
  }

  /** Every served type, one per served version. */
  get types(): readonly ResourceType[] {
    return this.list;
  }

  /** Adds a type served in one version, or replaces every version of the one with the same group and plural. */
  add(type: ResourceType): void {
    this.set(type, [type]);
  }

  /**
   * Serves `served` (one type per served version, maybe none) for the group and plural of `primary`, replacing what
   * was served for them; `primary` is what `byGroupPlural` answers (a CRD's storage version).
   */
  set(primary: ResourceType, served: readonly ResourceType[]): void {
    const key = typeKey(primary);
    const previous = this.served.get(key) ?? [];
    for (const old of previous) {
      this.byVersion.delete(versionKey(old));
      this.byKind.delete(`${apiVersionOf(old)}/${old.kind}`);
    }
    this.byKey.set(key, primary);
    this.served.set(key, served);
    for (const type of served) {
      this.byVersion.set(versionKey(type), type);
      this.byKind.set(`${apiVersionOf(type)}/${type.kind}`, type);
    }
    // Keep the first registration's position, so discovery's order stays stable across CRD updates.
    const at = previous.length > 0 ? this.list.indexOf(previous[0]!) : -1;
    const rest = this.list.filter((t) => !previous.includes(t));
    if (at < 0) this.list = [...rest, ...served];
    else this.list = [...rest.slice(0, at), ...served, ...rest.slice(at)];
    this.generation++;
  }

  remove(type: ResourceType): void {
    const key = typeKey(type);
    if (!this.byKey.has(key)) return;
    const previous = this.served.get(key) ?? [];
    for (const old of previous) {
      this.byVersion.delete(versionKey(old));
      this.byKind.delete(`${apiVersionOf(old)}/${old.kind}`);
    }
    this.byKey.delete(key);
    this.served.delete(key);
    this.list = this.list.filter((t) => !previous.includes(t));
    this.generation++;
  }

  byGroupPlural(group: string, plural: string): ResourceType | undefined {
    return this.byKey.get(`${group}/${plural}`);
  }

  /** The type served for this version of a group and plural; undefined when that version is not served. */
  byGroupVersionPlural(group: string, version: string, plural: string): ResourceType | undefined {
    return this.byVersion.get(`${group}/${version}/${plural}`);
  }

  /** The served versions of a group and plural (a CRD's served versions; one for a built-in type). */
  servedVersions(group: string, plural: string): readonly ResourceType[] {
    return this.served.get(`${group}/${plural}`) ?? [];
  }

  byApiVersionKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.byKind.get(`${apiVersion}/${kind}`);
  }

  /**
   * Group → versions served, highest priority first (Kubernetes' version order, so that the first is the group's
   * preferred version, as discovery reports it); the core group is ''.
   */
  groups(): Map<string, string[]> {
    const groups = new Map<string, string[]>();
    for (const type of this.types) {
      const versions = groups.get(type.group) ?? [];
      if (!versions.includes(type.version)) versions.push(type.version);
      groups.set(type.group, versions);
    }
    for (const [group, versions] of groups) if (versions.length > 1) groups.set(group, byVersionPriority(versions));
    return groups;
  }

  inGroupVersion(group: string, version: string): ResourceType[] {
    return this.types.filter((t) => t.group === group && t.version === version);
  }
}

function versionKey(type: ResourceType): string {
  return `${type.group}/${type.version}/${type.plural}`;
}
