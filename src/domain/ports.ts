/**
 * What the domain needs from the world, as interfaces. `src/kinds/<kind>/controller` implements them on Kubernetes (informer
 * caches and API writes); the composition root hands the implementations to the domain. No Kubernetes types here.
 */
import { LOCAL_CLUSTER } from './clusters/model.js';
import type { RolloutKind } from './events.js';
import type { Rollout, RolloutTarget } from './RolloutService.js';
import type { RollbackRules } from './launchRules.js';

/**
 * One target: an object of a member cluster. `cluster` absent is `local` (ADR 0054): every caller that predates member
 * clusters names local's targets as before.
 */
export interface TargetRef {
  cluster?: string;
  namespace: string;
  name: string;
}

/** A target the engine has admitted (its change was, or is being, written). */
export interface AdmittedTarget extends TargetRef {
  rolloutId: string;
  kind: RolloutKind;
  ordinal: number;
  fromVersion: string | null;
  toVersion: string;
  /** When the engine admitted it (deadlines count from here). */
  admittedAt: Date;
}

/**
 * Where an admitted target is, as the driver sees it in the cluster. `untouched`: the rollout ended before its change
 * was written for this target, and nothing will write it now — the target did not change, and ends CANCELLED with the
 * reason (attack 22, G4: a member's admission is the history's row first, its write follows; a rollout superseded in
 * between left the target PROGRESSING until its deadline, then FAILED, though nothing had changed).
 */
export type TargetObservation =
  | { phase: 'progressing'; message?: string }
  | { phase: 'succeeded' }
  | { phase: 'failed'; reason: string }
  | { phase: 'untouched'; reason: string };

/**
 * What a rollout kind gives the engine. The engine decides *which* targets may change now; the driver writes the
 * change for one target and reports whether it converged, level-based, from the cluster's current state.
 * Every method must be idempotent: after a crash the engine calls `prepare`/`admit` again for the same target.
 */
export interface RolloutDriver {
  readonly kind: RolloutKind;
  /**
   * Why the rollout cannot go on in the cluster as it is now (e.g. the rollout asks for a way of working the cluster
   * does not allow, or someone else changed what the rollout relies on); undefined when it can. The engine fails an
   * active rollout with this reason instead of racing whoever changed the cluster. Optional.
   */
  haltReason?(rollout: Rollout): Promise<string | undefined>;
  /**
   * Before the first admission (e.g. write the new ClusterVersion spec, set the DaemonSet's update strategy).
   * `changingClusters` answers the clusters where the rollout changes a target (not only skips them), for a driver that
   * spans clusters: one where it changes nothing is not prepared.
   */
  prepare?(rollout: Rollout, signal: AbortSignal, changingClusters?: () => Promise<ReadonlySet<string>>): Promise<void>;
  /** Writes the change for one target (e.g. set `status.agentPodRef.image`, add the opt-in label). */
  admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void>;
  /** Reports the target's state; reads informer caches, so it is cheap to call often. */
  observe(target: AdmittedTarget, rollout: Rollout): Promise<TargetObservation>;
  /**
   * Whether admitting this PENDING target now would only hold a slot of maxUnavailable until its progress deadline
   * (its member cluster is not driven: unreachable, unauthorized, syncing). Such targets are admitted after every
   * other pending one, so a dead cluster does not slow the healthy ones; they still are admitted, and fail at their
   * deadline naming the cluster unless it is back first. Optional; never deferred when absent.
   */
  deferAdmission?(target: Pick<RolloutTarget, 'cluster'>): boolean;
  /**
   * Targets of this rollout's selection that are unavailable right now although the rollout is not changing them
   * (they count against maxUnavailable). Optional; 0 when absent.
   */
  unavailableOutsideRollout?(rollout: Rollout, inRollout: ReadonlySet<string>): Promise<number>;
  /**
   * After the rollout reached a terminal state and no target is progressing: undo what `prepare` changed, unless
   * `others` (the kind's other active rollouts) still rely on it.
   */
  finish?(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void>;
  /**
   * The kind's say in a rollback of one of its rollouts (launchRules.ts: RollbackRules): may refuse one the cluster
   * cannot run, or give its launch a guard. Optional; absent, every rollback the engine plans may run.
   */
  readonly rollbackRules?: RollbackRules;
}

/**
 * `namespace/name`, or `name` for cluster-scoped objects and nodes; prefixed by `cluster:` outside `local` (no
 * namespace or name has a colon), so local's keys read as before clusters.
 */
export function targetKey(ref: TargetRef): string {
  const key = ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
  return isLocal(ref.cluster) ? key : `${ref.cluster}:${key}`;
}

/** The cluster of a target, `local` when it names none. */
export function clusterOf(ref: { cluster?: string | undefined }): string {
  return ref.cluster ?? LOCAL_CLUSTER;
}

function isLocal(cluster: string | undefined): boolean {
  return cluster === undefined || cluster === LOCAL_CLUSTER;
}

/**
 * `{ cluster }` for a cluster other than `local`, else nothing: what a domain object, an event or a port call carries,
 * so that everything about `local` has the shape it had before member clusters (the stores read absent as local).
 */
export function clusterField(cluster: string | undefined): { cluster?: string } {
  return isLocal(cluster) ? {} : { cluster: cluster! };
}
