import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';
import { MAX_IDEMPOTENCY_KEY } from './kinds/cause.js';
import type { RolloutPlan } from './kinds/index.js';
import type { Cause, Rollout, RolloutService } from './RolloutService.js';
import { checkReplay, type LaunchGuard } from './launchRules.js';

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
  /** The kind's own rule over its active rollouts, decided under the launch lock (not run for dry runs). */
  guard?: LaunchGuard;
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
 * Turns a plan into a rollout: validation, dry runs and the fast path of idempotent retries; the rule that two active
 * rollouts never cover the same target is decided by RolloutService.create, atomically with the creation. It does not
 * enqueue what it creates: the engine hears of every new rollout through its committed RolloutStateChanged event
 * (engineReactions.ts), the one path for this replica's launches and other replicas' alike.
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

    // The overlap rule, supersede and the kind's guard are decided in the creating transaction, under the kind's launch
    // lock (RolloutService.create): a check here, before it, would let two replicas both pass it.
    const { rollout, created } = await this.rollouts.create(
      {
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
      },
      { supersede: request.supersede === true, ...(request.guard ? { guard: request.guard } : {}) },
    );
    return { rollout, plan: items, created, dryRun: false };
  }

  /** The fast path of a retry, before any lock: the key's rollout, or CONFLICT for a different request under it. */
  /**
   * The key's rollout if the same request made it; CONFLICT if another did. Two reads outside a transaction, in this
   * order: a rollout and its record commit together, so once the rollout is seen its record is too. Read the other way
   * round, a rollout committed (on any replica) between the two reads came without its record and passed for this
   * request's (attack finding: a retry was answered with another request's rollout, even of another kind).
   */
  private async replay(key: string, requestHash: string): Promise<Rollout | undefined> {
    const rollout = await this.rollouts.findByIdempotencyKey(key);
    if (!rollout) return undefined;
    checkReplay(key, requestHash, rollout.id, await this.rollouts.idempotencyRecord(key));
    return rollout;
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
