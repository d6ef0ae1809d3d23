import type { KubeObject } from '../types.js';
import { badRequest } from '../store/errors.js';
import { isPlainObject } from '../store/objects.js';

/** The `autoscaling/v1` Scale view of a Deployment, ReplicaSet or StatefulSet (what `kubectl scale` reads and patches). */
export function toScale(object: KubeObject): KubeObject {
  const matchLabels = (object.spec?.selector?.matchLabels ?? {}) as Record<string, string>;
  const meta = object.metadata;
  return {
    apiVersion: 'autoscaling/v1',
    kind: 'Scale',
    metadata: {
      name: meta.name,
      ...(meta.namespace ? { namespace: meta.namespace } : {}),
      ...(meta.uid ? { uid: meta.uid } : {}),
      ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
      ...(meta.creationTimestamp ? { creationTimestamp: meta.creationTimestamp } : {}),
    },
    spec: { replicas: object.spec?.replicas ?? 1 },
    status: {
      replicas: object.status?.replicas ?? 0,
      selector: Object.entries(matchLabels)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    },
  };
}

/** The workload with the replicas a (possibly patched) Scale asks for; a resourceVersion in it is kept as precondition. */
export function fromScale(object: KubeObject, scale: unknown): KubeObject {
  if (!isPlainObject(scale) || !isPlainObject(scale.spec)) throw badRequest('a Scale needs spec.replicas');
  const replicas = scale.spec.replicas;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw badRequest('spec.replicas must be a non-negative integer');
  }
  const rv = isPlainObject(scale.metadata) ? scale.metadata.resourceVersion : undefined;
  return {
    ...object,
    metadata: { ...object.metadata, ...(typeof rv === 'string' && rv ? { resourceVersion: rv } : {}) },
    spec: { ...object.spec, replicas },
  };
}
