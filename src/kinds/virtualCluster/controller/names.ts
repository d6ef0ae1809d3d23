import { VIRTUAL_CLUSTER_DEFAULTS } from '../settings.js';

/** Names shared with upstream cluster-api-provider-nested (spec/virtual-clusters.md) and rollplane's own bookkeeping. */
export const TENANCY_GROUP = 'tenancy.x-k8s.io';
export const TENANCY_VERSION = 'v1alpha1';
export const VC_PLURAL = 'virtualclusters';
export const CV_PLURAL = 'clusterversions';

/** Opt-in label: the VirtualCluster may be upgraded to its ClusterVersion's current spec. */
export const LABEL_READY_FOR_UPGRADE = 'tenancy.x-k8s.io/ready-for-upgrade';
/** The ClusterVersion resourceVersion the control plane runs; written only after a successful upgrade. */
export const LABEL_VERSION_APPLIED = 'tenancy.x-k8s.io/cluster-version-applied';

/** Upstream's pod-template label naming the cluster (namespace) a control-plane pod belongs to. */
export const LABEL_CLUSTER = 'tenancy.x-k8s.io/cluster';

/** The label whose value upstream adds to the apiserver certificate's DNS names. */
export const LABEL_EXTERNAL_APISERVER_DOMAIN = 'tenancy.x-k8s.io/external-apiserver-domain';

export type KeyAlgorithm = 'ecdsa-p256' | 'rsa-2048';
/** Upstream's key type and encoding (RSA-2048, PKCS#1): the vc-manager reads root-ca only that way. */
export const DEFAULT_KEY_ALGORITHM: KeyAlgorithm = VIRTUAL_CLUSTER_DEFAULTS.keyAlgorithm;
/** Why ECDSA is not the default; logged at start-up and returned with every PKI issued with it. */
export const ECDSA_WARNING =
  'keyAlgorithm ecdsa-p256 breaks the CAPN vc-manager: it decodes root-ca only as a PKCS#1 RSA key, so it fails every reconcile of a cluster whose root CA rollplane generated';

/** Upstream's field manager for every control-plane write. */
export const PROVISIONER_FIELD_MANAGER = 'virtualcluster/provisioner/native';
/** rollplane's own field manager for ClusterVersion changes (so its fields are told apart from the provisioner's). */
export const ROLLPLANE_FIELD_MANAGER = 'rollplane';

export const REASON_UPGRADE_COMPLETED = 'TenantControlPlaneUpgradeCompleted';
export const REASON_UPGRADE_FAILED = 'TenantControlPlaneUpgradeFailed';
export const MESSAGE_UPGRADE_COMPLETED = 'tenant control plane is upgraded';

/** JSON of the upgrade in progress (UpgradeProgress): lets a reconcile resume after a requeue, a restart or a failover. */
export const ANNOTATION_PROGRESS = 'rollplane.io/upgrade-progress';
/** JSON of the last finished upgrade (LastUpgrade): what the rollout driver reads to tell success from failure. */
export const ANNOTATION_LAST_UPGRADE = 'rollplane.io/last-upgrade';
/** The rollout that admitted the cluster (set with the opt-in label, cleared when the upgrade ends). */
export const ANNOTATION_ROLLOUT = 'rollplane.io/rollout-id';

/** PKI secrets in the cluster namespace; `root-ca` is kept, the others are regenerated on every upgrade. */
export const ROOT_CA_SECRET = 'root-ca';
export const REGENERATED_SECRETS = [
  'apiserver-ca',
  'etcd-ca',
  'front-proxy-ca',
  'controller-manager-kubeconfig',
  'admin-kubeconfig',
  'serviceaccount-rsa',
] as const;

/**
 * Each PKI secret's type as upstream creates it (secret.go): certificate/key pairs and the service-account key are
 * `kubernetes.io/tls` (which the API server refuses without `tls.crt` and `tls.key`), kubeconfigs `Opaque`. Used when a
 * secret is missing; an existing secret's type is kept, since the type is immutable.
 */
export const PKI_SECRET_TYPES: Readonly<Record<string, string>> = {
  'root-ca': 'kubernetes.io/tls',
  'apiserver-ca': 'kubernetes.io/tls',
  'etcd-ca': 'kubernetes.io/tls',
  'front-proxy-ca': 'kubernetes.io/tls',
  'serviceaccount-rsa': 'kubernetes.io/tls',
  'controller-manager-kubeconfig': 'Opaque',
  'admin-kubeconfig': 'Opaque',
};

/** Secrets whose `<secret>-hash` pod-template annotation restarts a component when they change. */
export const HASHED_SECRETS = {
  apiserver: ['root-ca', 'apiserver-ca', 'front-proxy-ca', 'serviceaccount-rsa'],
  'controller-manager': ['root-ca', 'serviceaccount-rsa', 'controller-manager-kubeconfig'],
} as const;

/** Component names in apply order, as reported in ClusterUpgradeObserved events. */
export type UpgradeComponent = 'apiserver-service' | 'pki' | 'apiserver' | 'controller-manager';
