/**
 * Pure helpers over the objects a control-plane upgrade reads and writes: content hashes, the embedded objects of a
 * ClusterVersion as apply bodies, the StatefulSet "has rolled" rule and the progress annotations.
 */
import { createHash } from 'node:crypto';
import type { V1StatefulSet } from '@kubernetes/client-node';
import { clusterSpecVersion } from '../plan.js';
import { canonicalJson } from '../../../util/canonicalJson.js';
import { ANNOTATION_LAST_UPGRADE, ANNOTATION_PROGRESS, type UpgradeComponent } from './names.js';
import type { ClusterVersionSpec, EmbeddedObject } from './types.js';

/** The version name of a ClusterVersion spec (see ../plan.ts). */
export function specVersion(spec: ClusterVersionSpec | undefined): string {
  return clusterSpecVersion(spec);
}

/** `<secret>-hash`: sha256 of the secret's data. */
export function secretHash(data: Record<string, string> | undefined): string {
  return createHash('sha256')
    .update(canonicalJson(data ?? {}))
    .digest('hex');
}

/** An embedded object of the ClusterVersion as an apply body for the cluster namespace (server-set fields dropped). */
export function applyBody(object: EmbeddedObject, namespace: string, defaults: { apiVersion: string; kind: string }): EmbeddedObject {
  const { status: _status, ...rest } = object;
  const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ct, managedFields: _mf, generation: _g, selfLink: _sl, ...metadata } = object.metadata ?? {};
  return { ...rest, apiVersion: object.apiVersion ?? defaults.apiVersion, kind: object.kind ?? defaults.kind, metadata: { ...metadata, namespace } };
}

/** Whether a service spec is ClusterIP (the Kubernetes default when `type` is absent). */
export function isClusterIP(service: EmbeddedObject | undefined): boolean {
  return service !== undefined && (service.spec?.type ?? 'ClusterIP') === 'ClusterIP';
}

export type RolloutCheck =
  | { state: 'rolled' }
  /** `stuckPods`: a replica is neither updated nor ready, so a broken old pod may block an OrderedReady rollout. */
  | { state: 'waiting'; reason: string; stuckPods?: boolean }
  | { state: 'error'; reason: string };

/**
 * Whether a StatefulSet has rolled out its current spec: the controller saw this generation, every replica runs the
 * update revision and is ready, and currentRevision caught up. Stricter than upstream's readyReplicas == replicas,
 * which also holds on old pods. `minGeneration` is the generation our apply produced, so a stale cache is never
 * mistaken for a finished rollout.
 */
export function checkRolled(sts: V1StatefulSet | undefined, minGeneration: number): RolloutCheck {
  if (!sts) return { state: 'waiting', reason: 'the StatefulSet is not in the cache yet' };
  if (sts.spec?.updateStrategy?.type === 'OnDelete')
    return { state: 'error', reason: `StatefulSet ${sts.metadata?.name} uses the OnDelete update strategy; it would never roll` };
  const generation = sts.metadata?.generation ?? 0;
  if (generation < minGeneration) return { state: 'waiting', reason: 'the cache has not seen the applied generation yet' };
  const status = sts.status;
  if ((status?.observedGeneration ?? 0) < generation)
    return { state: 'waiting', reason: `observedGeneration ${status?.observedGeneration ?? 0} < generation ${generation}` };
  const replicas = sts.spec?.replicas ?? 1;
  const updated = status?.updatedReplicas ?? 0;
  const ready = status?.readyReplicas ?? 0;
  if (updated !== replicas || ready !== replicas) {
    return { state: 'waiting', reason: `${updated} updated and ${ready} ready of ${replicas} replicas`, stuckPods: updated < replicas && ready < replicas };
  }
  if (status?.currentRevision !== status?.updateRevision)
    return { state: 'waiting', reason: `currentRevision ${status?.currentRevision} != updateRevision ${status?.updateRevision}` };
  return { state: 'rolled' };
}

export interface ComponentTime {
  component: UpgradeComponent;
  seconds: number;
}

/** The upgrade in progress, kept on the VirtualCluster (ANNOTATION_PROGRESS) between reconciles. */
export interface UpgradeProgress {
  /** The ClusterVersion resourceVersion being applied. */
  resourceVersion: string;
  /** specVersion() of the ClusterVersion spec being applied. */
  specVersion: string;
  /** Wall-clock ms when the upgrade started (the clusters_upgrade_seconds timer). */
  startedAt: number;
  /** The component being waited for. */
  step: 'apiserver' | 'controller-manager';
  /** Its StatefulSet's name (from the ClusterVersion; upstream's are `apiserver` and `controller-manager`). */
  statefulSet?: string;
  stepStartedAt: number;
  /** metadata.generation our apply of the step's StatefulSet produced. */
  generation: number;
  /** Finished components, in apply order. */
  components: ComponentTime[];
  /** controller-manager pod-template annotations, computed with the PKI. */
  controllerManagerHashes: Record<string, string>;
  rootCaGenerated: boolean;
}

export type UpgradeOutcome = 'SUCCEEDED' | 'FAILED' | 'ALREADY_APPLIED';

/** The last finished upgrade (ANNOTATION_LAST_UPGRADE). */
export interface LastUpgrade {
  resourceVersion: string;
  specVersion: string;
  outcome: UpgradeOutcome;
  error: string | null;
  /** Wall-clock ISO time. */
  finishedAt: string;
  /** The rollout that admitted the upgrade (its ANNOTATION_ROLLOUT); null for a label added by hand. */
  rolloutId: string | null;
}

function parseAnnotation<T>(annotations: Record<string, string> | undefined, key: string, valid: (v: any) => boolean): T | undefined {
  const raw = annotations?.[key];
  if (!raw) return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    return valid(value) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

export function progressOf(annotations: Record<string, string> | undefined): UpgradeProgress | undefined {
  return parseAnnotation<UpgradeProgress>(
    annotations,
    ANNOTATION_PROGRESS,
    (v) => v && typeof v.resourceVersion === 'string' && typeof v.startedAt === 'number' && typeof v.generation === 'number' && Array.isArray(v.components),
  );
}

export function lastUpgradeOf(annotations: Record<string, string> | undefined): LastUpgrade | undefined {
  return parseAnnotation<LastUpgrade>(annotations, ANNOTATION_LAST_UPGRADE, (v) => v && typeof v.specVersion === 'string' && typeof v.outcome === 'string');
}
