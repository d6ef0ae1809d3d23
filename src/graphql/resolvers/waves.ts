import type { Principal } from '../../auth/roles.js';
import type { GateView, StoredRun } from '../../domain/waves/StagedRuns.js';
import type { FrozenRun } from '../../domain/waves/strategy.js';
import type { Gate, Resolvers, WavePlan } from '../generated/resolvers.js';
import { optionalText, requireId } from './eventSubscription.js';
import { ValidationError } from '../../errors.js';

/**
 * Staged rollouts in the API (issue 30, docs/waves.md): a bump's and a rollout's frozen wave plan, a rollout's gates
 * with every decision kept, and the approve/reject mutations.
 */
export function wavePlanOf(run: FrozenRun | StoredRun): WavePlan {
  const states = 'waveStates' in run ? run.waveStates : undefined;
  return {
    waves: run.waves.map((w, i) => ({
      name: w.name,
      clusters: [...w.clusters],
      maxConcurrency: w.maxConcurrency,
      maxFailures: w.maxFailures,
      minSuccessSeconds: Math.round(w.minSuccessMs / 1000),
      mandatory: w.mandatory,
      remainder: w.remainder,
      before: w.before ? { type: w.before.type as 'APPROVAL', config: w.before.config } : null,
      after: w.after ? { type: w.after.type as 'APPROVAL', config: w.after.config } : null,
      state: states?.[i]?.state ?? 'PENDING',
      reason: states?.[i]?.reason ?? null,
      startedAt: states?.[i]?.startedAt ?? null,
      finishedAt: states?.[i]?.finishedAt ?? null,
    })),
    excluded: [...run.excluded],
    failurePolicy: run.failurePolicy,
  };
}

export function gateOf(view: GateView): Gate {
  const { row } = view;
  return {
    key: row.key,
    type: row.type as Gate['type'],
    config: JSON.parse(row.config) as unknown,
    state: view.progress.state,
    reason: view.progress.reason,
    openedAt: row.openedAt,
    endedAt: row.endedAt,
    decisions: view.decisions.map((d) => ({
      by: d.tokenId,
      role: d.role as Gate['decisions'][number]['role'],
      decision: d.decision as 'APPROVE' | 'REJECT',
      comment: d.comment,
      at: d.at,
    })),
  };
}

/** Who decides at a gate: the token's id, or `anonymous` with authentication off. */
function deciderOf(principal: Principal): { deciderId: string; role: Principal['role'] } {
  return { deciderId: principal.kind === 'token' ? principal.tokenId : 'anonymous', role: principal.role };
}

function gateKeyOf(value: unknown): string {
  if (typeof value !== 'string' || !/^(before|after):[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value)) {
    throw new ValidationError('gate', 'must be `before:<wave>` or `after:<wave>`');
  }
  return value;
}

export const wavesResolvers: Resolvers = {
  Mutation: {
    approveGate: async (_, args, ctx) => {
      const request = {
        rolloutId: requireId(args.rolloutId),
        gateKey: gateKeyOf(args.gate),
        verdict: 'APPROVE' as const,
        comment: optionalText(args.comment) ?? null,
      };
      return gateOf(await ctx.domain.rollouts.runs.decide({ ...request, ...deciderOf(ctx.principal) }, new Date()));
    },
    rejectGate: async (_, args, ctx) => {
      const request = {
        rolloutId: requireId(args.rolloutId),
        gateKey: gateKeyOf(args.gate),
        verdict: 'REJECT' as const,
        comment: optionalText(args.comment) ?? null,
      };
      return gateOf(await ctx.domain.rollouts.runs.decide({ ...request, ...deciderOf(ctx.principal) }, new Date()));
    },
  },
  BumpPayload: {
    wavePlan: async (payload, _, ctx) => {
      const result = payload as { run?: FrozenRun; rollout: { id: string }; dryRun: boolean };
      if (result.dryRun) return result.run ? wavePlanOf(result.run) : null;
      const stored = await ctx.domain.rollouts.runs.runOf(result.rollout.id);
      return stored ? wavePlanOf(stored) : null;
    },
  },
  Rollout: {
    wavePlan: async (rollout, _, ctx) => {
      if (rollout.id === 'dry-run') return null;
      const stored = await ctx.domain.rollouts.runs.runOf(rollout.id);
      return stored ? wavePlanOf(stored) : null;
    },
    gates: async (rollout, _, ctx) => (rollout.id === 'dry-run' ? [] : (await ctx.domain.rollouts.runs.gates(rollout.id, new Date())).map(gateOf)),
  },
};
