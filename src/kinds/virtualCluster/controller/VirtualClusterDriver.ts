import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer } from '../../../controller/Informer.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../../domain/ports.js';
import type { Rollout } from '../../../domain/RolloutService.js';
import { clusterVersionChangeOf } from '../plan.js';
import { AppError, ErrorCode, NotFoundError } from '../../../errors.js';
import { ANNOTATION_ROLLOUT, LABEL_READY_FOR_UPGRADE, LABEL_VERSION_APPLIED, REASON_UPGRADE_COMPLETED, REASON_UPGRADE_FAILED } from './names.js';
import type { ControlPlaneApi } from './ControlPlaneApi.js';
import { lastUpgradeOf, progressOf, specVersion } from './objects.js';
import type { ClusterVersionObject, VirtualClusterObject } from './types.js';
import type { VcManagerGate } from './vcManagerGate.js';
import type { RecordOnce } from '../../../controllers/RecordOnce.js';
import type { UpgradeRecord } from './VirtualClusterReconciler.js';

export interface VirtualClusterDriverDeps {
  api: ControlPlaneApi;
  virtualClusters: Informer<VirtualClusterObject & KubernetesObject>;
  clusterVersions: Informer<ClusterVersionObject & KubernetesObject>;
  /** The vc-manager beside rollplane (ADR 0018). */
  gate?: Pick<VcManagerGate, 'upstreamUpgrades'>;
  /** Upgrade ends not yet recorded: a target is done once its ClusterUpgradeObserved event is in the history. */
  upgrades: Pick<RecordOnce<UpgradeRecord>, 'get'>;
}

/**
 * The VIRTUAL_CLUSTER rollout kind: `prepare` writes the ClusterVersion spec the rollout carries (server-side apply,
 * field manager `rollplane`); `admit` adds upstream's opt-in label (and the rollout id) to one VirtualCluster, and the
 * VirtualClusterReconciler does the rest; `observe` reads the outcome the reconciler recorded for this rollout.
 */
export class VirtualClusterDriver implements RolloutDriver {
  readonly kind = 'VIRTUAL_CLUSTER' as const;

  constructor(private readonly deps: VirtualClusterDriverDeps) {}

  /** Idempotent: when the ClusterVersion already has the spec, nothing is written (its resourceVersion stays). */
  async prepare(rollout: Rollout): Promise<void> {
    const change = clusterVersionChangeOf(rollout.strategy);
    if (!change) throw new AppError(ErrorCode.Internal, `rollout ${rollout.id} carries no clusterVersionChange in its strategy`);
    // A rollback (strategy copied from the original) restores the spec the original replaced.
    const spec = rollout.rollbackOfId ? change.previousSpec : change.desiredSpec;
    const current = await this.deps.api.findClusterVersion(change.name);
    if (!current) throw new NotFoundError(`ClusterVersion ${change.name} no longer exists; rollout ${rollout.id} cannot change it`);
    if (specVersion(current.spec) === specVersion(spec)) return;
    // Take ownership of every current field first, so that fields the change drops are removed even when another
    // manager set them (server-side apply only removes fields the applier owned).
    await this.deps.api.applyClusterVersionSpec(change.name, current.spec ?? {});
    await this.deps.api.applyClusterVersionSpec(change.name, spec);
  }

  async admit(target: AdmittedTarget, rollout: Rollout): Promise<void> {
    const vc = this.deps.virtualClusters.get(target.namespace, target.name);
    if (!vc) return; // observe reports it missing
    const annotations = vc.metadata.annotations ?? {};
    const labelled = vc.metadata.labels?.[LABEL_READY_FOR_UPGRADE] === 'true' && annotations[ANNOTATION_ROLLOUT] === rollout.id;
    const last = lastUpgradeOf(annotations);
    const done = last?.rolloutId === rollout.id && last.outcome !== 'FAILED';
    if (labelled || done) return;
    // The vc-manager's gate is on (turned on mid-rollout: bumpClusterVersion refuses it up front): labelling would
    // hand the cluster to it outside rollplane's strategy. observe() reports why the target is not admitted.
    if (this.deps.gate?.upstreamUpgrades()) return;
    await this.deps.api.optInToUpgrade(target.namespace, target.name, rollout.id);
  }

  async observe(target: AdmittedTarget, rollout: Rollout): Promise<TargetObservation> {
    const vc = this.deps.virtualClusters.get(target.namespace, target.name);
    if (!vc) return { phase: 'failed', reason: `VirtualCluster ${target.namespace}/${target.name} not found` };
    const labels = vc.metadata.labels ?? {};
    const annotations = vc.metadata.annotations ?? {};
    const labelled = labels[LABEL_READY_FOR_UPGRADE] === 'true';
    const last = lastUpgradeOf(annotations);
    if (!labelled && last?.rolloutId === rollout.id) {
      if (this.deps.upgrades.get(target.namespace, target.name)) return { phase: 'progressing', message: 'recording the upgrade' };
      if (last.outcome === 'FAILED') return { phase: 'failed', reason: `fail to upgrade: ${last.error ?? 'unknown error'}` };
      if (last.specVersion === rollout.toVersion) return { phase: 'succeeded' };
      return {
        phase: 'failed',
        reason: `upgraded to ${last.specVersion}, but the rollout wants ${rollout.toVersion} (the ClusterVersion changed during the rollout)`,
      };
    }
    // Upgraded by someone else (e.g. the upstream controller) to what this rollout wants.
    const cv = this.deps.clusterVersions.get(undefined, vc.spec?.clusterVersionName ?? '');
    if (
      !labelled &&
      cv &&
      labels[LABEL_VERSION_APPLIED] === cv.metadata.resourceVersion &&
      specVersion(cv.spec) === rollout.toVersion &&
      vc.status?.reason === REASON_UPGRADE_COMPLETED
    ) {
      return { phase: 'succeeded' };
    }
    // Labelled by this rollout, then left to the vc-manager (its gate turned on meanwhile). It removes the label but
    // not rollplane's rollout annotation (rollplane's own finish clears that), and writes the applied marker whatever
    // the outcome (an upstream defect): marker current + Failed is its failure; anything else, it is not done yet.
    const upstream = this.deps.gate?.upstreamUpgrades();
    if (upstream && !labelled) {
      const handedOver = annotations[ANNOTATION_ROLLOUT] === rollout.id && last?.rolloutId !== rollout.id;
      if (!handedOver) return { phase: 'failed', reason: `not admitted: ${upstream}` };
      if (cv && labels[LABEL_VERSION_APPLIED] === cv.metadata.resourceVersion && vc.status?.reason === REASON_UPGRADE_FAILED) {
        return { phase: 'failed', reason: `the vc-manager upgraded the cluster and failed: ${vc.status.message ?? 'no message'}` };
      }
      return { phase: 'progressing', message: 'the vc-manager is upgrading the cluster (its ClusterVersionPartialUpgrade gate is on)' };
    }
    const progress = progressOf(annotations);
    if (progress) return { phase: 'progressing', message: `waiting for the ${progress.step} StatefulSet to roll` };
    if (labelled)
      return {
        phase: 'progressing',
        message: vc.status?.phase === 'Running' ? 'upgrade queued' : `waiting for the cluster to be Running (phase ${vc.status?.phase ?? 'unknown'})`,
      };
    return { phase: 'progressing', message: 'waiting for the opt-in label to be seen' };
  }
}
