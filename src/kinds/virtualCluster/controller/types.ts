/**
 * The parts of the tenancy.x-k8s.io objects this kind reads. Objects arrive as plain JSON from client-node's
 * CustomObjectsApi; these interfaces name the fields used and leave everything else open.
 */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

export interface EmbeddedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Record<string, any>;
  [key: string]: unknown;
}

/** One ClusterVersion bundle: apiServer, controllerManager or etcd. */
export interface ComponentBundle {
  metadata?: ObjectMeta;
  statefulset?: EmbeddedObject;
  service?: EmbeddedObject;
}

export interface ClusterVersionSpec {
  apiServer?: ComponentBundle;
  controllerManager?: ComponentBundle;
  etcd?: ComponentBundle;
  [key: string]: unknown;
}

export interface ClusterVersionObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: ClusterVersionSpec;
}

export interface VirtualClusterObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    clusterDomain?: string;
    clusterVersionName?: string;
    pkiExpireDays?: number;
    serviceCidr?: string;
    [key: string]: unknown;
  };
  status?: {
    phase?: string;
    clusterNamespace?: string;
    message?: string;
    reason?: string;
    conditions?: unknown[];
    [key: string]: unknown;
  };
}
