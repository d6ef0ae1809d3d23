import { createHash } from 'node:crypto';
import { ConflictError, ValidationError } from '../errors.js';
import type { RolloutKind } from './events.js';
import { MAX_IDEMPOTENCY_KEY } from './kinds/cause.js';
import type { RolloutPlan } from './kinds/index.js';
import type { Cause, Rollout, RolloutService } from './RolloutService.js';
import { ACTIVE_ROLLOUT_STATES } from './rolloutStates.js';

export type { RolloutPlan } from './kinds/index.js';

export interface LaunchRequest {
  plan: RolloutPlan;
  cause: Cause;
  idempotencyKey?: string | null;
  dryRun?: boolean;
  /** Abort active rollouts that cover any of the same targets instead of refusing with CONFLICT. */
  supersede?: boolean;
  /**
   * The user's request (mutation input without cause/dryRun), used to tell a retry (same key, same request: returns
   * the first rollout) from a mistake (same key, different request: CONFLICT).
   */
  request: unknown;
  /** Rollback rollouts name the rollout they revert. */
  rollbackOfId?: string;
}

export interface PlanItem {
  namespace: string;
  name: string;
  fromVersion: string | null;
  toVersion: string;
  action: 'change' | 'skip';
  reason: string | null;
}

export interface LaunchResult {
  rollout: Rollout;
  plan: PlanItem[];
  created: boolean;
  dryRun: boolean;
}

function fingerprint(value: unknown): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHash('sha256')
    .update(JSON.stringify(canonical(value)))
    .digest('hex');
}

/**
 * Turns a plan into a rollout: dry runs, idempotency keys, and the rule that two active rollouts never cover the same
 * target. It does not enqueue what it creates: the engine hears of every new rollout through its committed
 * RolloutStateChanged event (engineReactions.ts), the one path for this replica's launches and other replicas' alike.
 */
export class RolloutLauncher {
  constructor(private readonly rollouts: RolloutService) {}

  async launch(request: LaunchRequest): Promise<LaunchResult> {
    const { plan } = request;
    const key = request.idempotencyKey ?? undefined;
    if (key !== undefined && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY)) {
      throw new ValidationError('idempotencyKey', `must be 1 to ${MAX_IDEMPOTENCY_KEY} characters`);
    }
    const items: PlanItem[] = plan.targets.map((t) => ({
      namespace: t.namespace,
      name: t.name,
      fromVersion: t.fromVersion,
      toVersion: t.toVersion,
      action: t.skipReason ? 'skip' : 'change',
      reason: t.skipReason ?? null,
    }));
    const requestHash = fingerprint({ kind: plan.kind, request: request.request });

    if (key !== undefined) {
      const existing = await this.replay(key, requestHash);
      if (existing) return { rollout: existing, plan: items, created: false, dryRun: request.dryRun === true };
    }
    if (request.dryRun) {
      return { rollout: this.preview(request), plan: items, created: false, dryRun: true };
    }

    const changing = plan.targets.filter((t) => !t.skipReason);
    const overlapping = await this.activeOverlaps(plan.kind, changing);
    if (overlapping.length > 0 && key !== undefined) {
      // An identical request (same key) may have committed its rollout since the replay check above, here or on another
      // replica: that rollout is the answer, not a conflict.
      const existing = await this.replay(key, requestHash);
      if (existing) return { rollout: existing, plan: items, created: false, dryRun: false };
    }
    if (overlapping.length > 0 && !request.supersede) {
      throw new ConflictError(
        `active rollout ${overlapping[0]!.rolloutId} already covers ${overlapping[0]!.namespace ? `${overlapping[0]!.namespace}/` : ''}${overlapping[0]!.name}` +
          (overlapping.length > 1 ? ` (and ${overlapping.length - 1} more targets)` : '') +
          '; wait for it, abort it, or pass supersede: true',
        { details: { rolloutIds: [...new Set(overlapping.map((o) => o.rolloutId))] } },
      );
    }
    for (const rolloutId of new Set(overlapping.map((o) => o.rolloutId))) {
      await this.rollouts.abort(rolloutId, 'superseded by a newer rollout').catch((error: unknown) => {
        // It may have finished in the meantime; that is fine.
        if (!(error instanceof ConflictError)) throw error;
      });
    }

    const { rollout, created } = await this.rollouts.create({
      kind: plan.kind,
      fromVersion: plan.fromVersion,
      toVersion: plan.toVersion,
      selector: plan.selector,
      strategy: plan.strategy,
      cause: request.cause,
      idempotencyKey: key ?? null,
      requestHash: key !== undefined ? requestHash : null,
      rollbackOfId: request.rollbackOfId ?? null,
      targets: plan.targets,
    });
    if (key !== undefined && !created) {
      // Lost a race with a request of the same key (here or on another replica): the key's first rollout wins, and a
      // different request under that key is refused by `replay`.
      const existing = await this.replay(key, requestHash);
      if (existing) return { rollout: existing, plan: items, created: false, dryRun: false };
    }
    return { rollout, plan: items, created, dryRun: false };
  }

  private async replay(key: string, requestHash: string): Promise<Rollout | undefined> {
    const record = await this.rollouts.idempotencyRecord(key);
    const rollout = record ? await this.rollouts.get(record.rolloutId) : await this.rollouts.findByIdempotencyKey(key);
    if (!rollout) return undefined;
    if (record && record.requestHash !== requestHash) {
      throw new ConflictError(`idempotency key "${key}" was already used for a different request (rollout ${rollout.id})`, {
        details: { rolloutId: rollout.id },
      });
    }
    return rollout;
  }

  private async activeOverlaps(kind: RolloutKind, targets: readonly { namespace: string; name: string }[]) {
    if (targets.length === 0) return [];
    const wanted = new Set(targets.map((t) => `${t.namespace}/${t.name}`));
    const rows = await this.rollouts.coveredTargets(kind, ACTIVE_ROLLOUT_STATES);
    return rows.filter((row) => wanted.has(`${row.namespace}/${row.name}`));
  }

  private preview(request: LaunchRequest): Rollout {
    const now = new Date();
    const { plan, cause } = request;
    return {
      id: 'dry-run',
      kind: plan.kind,
      state: 'PENDING',
      fromVersion: plan.fromVersion,
      toVersion: plan.toVersion,
      selector: plan.selector,
      strategy: plan.strategy,
      cause,
      idempotencyKey: request.idempotencyKey ?? null,
      rollbackOfId: request.rollbackOfId ?? null,
      message: 'dry run: nothing was changed',
      engineState: {},
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
    };
  }
}
