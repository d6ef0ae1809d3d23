import { targetKey, type TargetRef } from './ports.js';
import { ConflictError } from '../errors.js';
import type { CoveredTarget, IdempotencyRecord } from './historyPort.js';
import type { NewTarget, Rollout } from './RolloutService.js';

/**
 * A kind's own rule over its busy rollouts (e.g. one change per ClusterVersion at a time), run under the launch lock in
 * the creating transaction, so no other replica can launch in between. Throws ConflictError to refuse. Busy: active,
 * or ended (aborted, failed) with admitted targets still finishing — they still change the cluster.
 */
export type LaunchGuard = (busy: readonly BusyRollout[], context: GuardContext) => void;

/** A busy rollout as a guard sees it. */
export interface BusyRollout extends Rollout {
  /**
   * The clusters it has targets in: every target, whatever its state (a pool it moved still runs what it moved it to),
   * read in the launch's transaction (HistoryReads.clustersOfRollout).
   */
  clusters: ReadonlySet<string>;
}

/** What a guard knows of the launch it judges. */
export interface GuardContext {
  /** The rollouts this launch supersedes (aborts in its own transaction): it takes their work over. */
  superseding: ReadonlySet<string>;
}

/**
 * What a launch decides atomically with the creation of its rollout (RolloutService.create): the overlap rule — no two
 * active rollouts cover the same target —, superseding, and the kind's guard.
 */
export interface LaunchRules {
  /** Abort the active rollouts that cover any of the same targets, in the same transaction, instead of refusing. */
  supersede?: boolean;
  /** Runs before the overlap rule; it decides itself what a supersede may take over (GuardContext.superseding). */
  guard?: LaunchGuard;
  /**
   * A rollback's original: aborted in the same transaction when still active (so a refused rollback leaves it as it
   * was), its targets not counted as overlapping, and it is among the guard's `superseding`.
   */
  takeOver?: string;
}

/** What the original's message says once a rollback took it over. */
export const ABORTED_FOR_ROLLBACK = 'aborted for a rollback';

/** A target a rollback of its rollout changes back: one the rollout changed, or was changing, from a known version. */
export function changedByRollout(target: { state: string; fromVersion: string | null }): boolean {
  return (target.state === 'SUCCEEDED' || target.state === 'FAILED' || target.state === 'PROGRESSING') && target.fromVersion !== null;
}

/**
 * A rollback planned from its original's targets found, once it held the original's row, that the original had
 * admitted more targets meanwhile: nothing was written; the engine plans it again (RolloutEngine.rollback).
 */
export class RollbackPlanStale extends ConflictError {}

/** What an aborted predecessor's message says. */
export const SUPERSEDED = 'superseded by a newer rollout';

/** The covered targets that are among `targets` (the launch's targets that will change). */
export function overlapsOf(covered: readonly CoveredTarget[], targets: readonly TargetRef[]): CoveredTarget[] {
  if (targets.length === 0) return [];
  const wanted = new Set(targets.map(targetKey));
  return covered.filter((row) => wanted.has(targetKey(row)));
}

/**
 * The refusal of a launch whose targets an active rollout already covers. It advises `supersede` only where the kind's
 * bump offers it (`KindContract.offersSupersede`) and the launch is no rollback.
 */
export function overlapConflict(offersSupersede: boolean, overlapping: readonly CoveredTarget[], rollback = false): ConflictError {
  const first = overlapping[0]!;
  return new ConflictError(
    `active rollout ${first.rolloutId} already covers ${first.namespace ? `${first.namespace}/` : ''}${first.name}` +
      (overlapping.length > 1 ? ` (and ${overlapping.length - 1} more targets)` : '') +
      (offersSupersede && !rollback ? '; wait for it, abort it, or pass supersede: true' : '; wait for it, or abort it'),
    { details: { rolloutIds: [...new Set(overlapping.map((o) => o.rolloutId))] } },
  );
}

/**
 * A key's rollout answers a retry of the same request; a different request under the key is CONFLICT. A rollout made
 * before records were kept (no record) counts as the same request.
 */
export function checkReplay(key: string, requestHash: string, rolloutId: string, record: IdempotencyRecord | undefined): void {
  if (record && record.requestHash !== requestHash) {
    throw new ConflictError(`idempotency key "${key}" was already used for a different request (rollout ${rolloutId})`, {
      details: { rolloutId },
    });
  }
}

/** The refusal of a plain launch whose targets are still changing under a rollout that ended (aborted or failed). */
export function stillChangingConflict(changing: readonly CoveredTarget[]): ConflictError {
  const first = changing[0]!;
  return new ConflictError(
    `${first.namespace ? `${first.namespace}/` : ''}${first.name} is still changing under rollout ${first.rolloutId}, which ended before it finished` +
      (changing.length > 1 ? ` (and ${changing.length - 1} more targets)` : '') +
      '; wait for it to finish',
    { details: { rolloutIds: [...new Set(changing.map((o) => o.rolloutId))] } },
  );
}

/**
 * A kind's say in a rollback (RolloutEngine.rollback), given the original and what the rollback would change: throws
 * ConflictError when the cluster cannot run it, which is asked before the original is aborted, so a refusal changes
 * nothing; else may return a guard for the launch, as a bump's (e.g. one image at a time beside the vm-dhcp-controller).
 * Asked once per cluster (ClusterRoutedDriver), `targets` are that cluster's and `everyTarget` the whole rollback's, for
 * a rule that spans clusters (one rollout asks one image of every controller it moves); asked once, they are the same.
 */
export type RollbackRules = (original: Rollout, targets: readonly NewTarget[], everyTarget?: readonly NewTarget[]) => Promise<{ guard?: LaunchGuard }>;

/** How a refusal names a busy rollout: an active one, or one that ended and still finishes admitted targets. */
export function busyRolloutName(rollout: Rollout): string {
  return ['PENDING', 'PROGRESSING', 'PAUSED'].includes(rollout.state)
    ? `active rollout ${rollout.id}`
    : `rollout ${rollout.id} (${rollout.state}, still finishing)`;
}
