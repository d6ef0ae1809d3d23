import { stepGateWaiting } from '../../domain/gates/stepGates.js';
import { targetGateStep } from '../../domain/gates/targetGates.js';
import type { Principal } from '../../auth/roles.js';
import type { GateView, StoredRun } from '../../domain/waves/StagedRuns.js';
import type { FrozenRun } from '../../domain/waves/strategy.js';
import type { Gate, MaintenanceWindowInput, Resolvers, WavePlan } from '../generated/resolvers.js';
import { optionalText, requireId } from './eventSubscription.js';
import { ValidationError } from '../../errors.js';
import { valuesText } from '../../analysis/model.js';
import { checkPageSize } from '../../util/pagination.js';
import { isDns1123Label } from '../../util/dnsNames.js';
import { portsHere } from '../../domain/clusterSelection.js';
import { decide as decideWindow, type WindowDecision, type WindowPolicyInput } from '../../domain/gates/maintenanceWindows.js';
import { decideStage } from '../../domain/waves/engineStage.js';
import { stagedAdmission } from '../../domain/waves/unreachable.js';
import type { GraphQLContext } from '../context.js';
import type { Rollout } from '../../domain/RolloutService.js';

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
      progressDeadlineSeconds: w.progressDeadlineSeconds,
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
    unreachable: run.unreachable,
    unreachableWaitSeconds: run.unreachableWait?.seconds ?? null,
    unreachableAfterWait: run.unreachableWait?.fallback ?? null,
  };
}

/** Token names already read by this request: a page of gates names the same few deciders again and again. */
const namesByRequest = new WeakMap<GraphQLContext, Map<string, Promise<string>>>();

/**
 * The name of the token with this id, as people know it (`anonymous` with authentication off, which is no token); the
 * id itself when the token no longer exists.
 */
function tokenName(ctx: GraphQLContext, tokenId: string): Promise<string> {
  if (tokenId === 'anonymous') return Promise.resolve(tokenId);
  let names = namesByRequest.get(ctx);
  if (!names) {
    names = new Map();
    namesByRequest.set(ctx, names);
  }
  let name = names.get(tokenId);
  if (!name) {
    name = ctx.domain.tokens.nameOf(tokenId).then((found) => found ?? tokenId);
    names.set(tokenId, name);
  }
  return name;
}

/**
 * A gate's fields from what StagedRuns read (GateView): its row, decisions, attempts and progress as computed now.
 * Its analysis runs are read when asked for (the analysis store, by rollout and gate key).
 */
const gateFields: Resolvers['Gate'] = {
  key: (view) => view.row.key,
  type: (view) => view.row.type as Gate['type'],
  config: (view) => JSON.parse(view.row.config) as unknown,
  state: (view) => view.progress.state,
  reason: (view) => view.progress.reason,
  openedAt: (view) => view.row.openedAt,
  endedAt: (view) => view.row.endedAt,
  decisions: (view, _, ctx) =>
    Promise.all(
      view.decisions.map(async (d) => ({
        by: d.tokenId,
        byName: await tokenName(ctx, d.tokenId),
        role: d.role as Gate['decisions'][number]['role'],
        decision: d.decision as 'APPROVE' | 'REJECT',
        comment: d.comment,
        at: d.at,
      })),
    ),
  attempts: (view, args) =>
    view.attempts.slice(-analysisPage(args.first, 50)).map((a) => ({
      number: a.seq,
      startedAt: a.startedAt,
      at: a.at,
      answer: a.answer,
      retryAfterSeconds: a.afterMs === null ? null : a.afterMs / 1000,
      reason: a.reason,
    })),
  analysisRuns: async (view, args, ctx) => {
    const runs = (await ctx.analysis?.gateRuns(view.row.rolloutId, view.row.key)) ?? [];
    return runs.slice(-analysisPage(args.first, 3));
  },
};

/**
 * A gate's attempts, runs and a run's measurements come 500 at most a page, as the schema says and the query cost
 * estimate counts (attack 19, F11: up to 1,000 were served, twice what was paid for).
 */
const MAX_ANALYSIS_PAGE = 500;

function analysisPage(first: number | null | undefined, fallback: number): number {
  return checkPageSize(first, fallback, MAX_ANALYSIS_PAGE);
}

/**
 * A run's measurements read once per request, however many aliases or fragments ask for them (attack 19, F6: 30
 * aliases of one run's 2,500 measurements read and parsed them 30 times, holding the event loop 2 s).
 */
type MeasurementsRead = ReturnType<NonNullable<GraphQLContext['analysis']>['measurementsOf']>;
const measurementReads = new WeakMap<object, Map<string, MeasurementsRead>>();

function measurementsOnce(ctx: GraphQLContext, runId: string): MeasurementsRead {
  const reads = measurementReads.get(ctx) ?? new Map<string, MeasurementsRead>();
  measurementReads.set(ctx, reads);
  const read = reads.get(runId) ?? ctx.analysis?.measurementsOf(runId) ?? Promise.resolve([]);
  reads.set(runId, read);
  return read;
}

const analysisRunFields: Resolvers['AnalysisRun'] = {
  measurements: async (run, args, ctx) => {
    const all = await measurementsOnce(ctx, run.id);
    const after = args.after ?? 0;
    if (!Number.isInteger(after) || after < 0) throw new ValidationError('after', 'must be a whole number of measurements to skip');
    return all.slice(after, after + analysisPage(args.first, 200)).map((m) => ({
      metric: m.metricName,
      number: m.seq,
      query: m.query,
      values: jsonValues(m.values),
      condition: m.condition,
      threshold: m.threshold,
      verdict: m.verdict,
      noData: m.noData,
      dryRun: m.dryRun,
      message: m.message,
      baselineQuery: m.baselineQuery,
      baselineValues: m.baselineValues ? jsonValues(m.baselineValues) : null,
      startedAt: m.startedAt,
      finishedAt: m.finishedAt,
    }));
  },
};

/** Values as JSON: NaN and ±Inf as the strings Prometheus writes (JSON has no such numbers). */
function jsonValues(values: readonly number[]): unknown[] {
  return JSON.parse(valuesText(values)) as unknown[];
}

/** Who decides at a gate: the token's id, or `anonymous` with authentication off. */
function deciderOf(principal: Principal): { deciderId: string; role: Principal['role'] } {
  return { deciderId: principal.kind === 'token' ? principal.tokenId : 'anonymous', role: principal.role };
}

/** A gate's key as the API takes it: `before:<wave>` or `after:<wave>`, the wave a DNS label (as waves are named). */
function gateKeyOf(value: unknown): string {
  // An analysis between the targets of a rollout without waves (ADR 0071): `targets:<n>`.
  if (typeof value === 'string' && targetGateStep(value) !== undefined) return value;
  const [position, wave, ...rest] = typeof value === 'string' ? value.split(':') : [];
  if ((position !== 'before' && position !== 'after') || wave === undefined || rest.length > 0 || isDns1123Label(wave).length > 0) {
    throw new ValidationError('gate', 'must be `before:<wave>`, `after:<wave>` or `targets:<n>`');
  }
  return value as string;
}

/** A window policy input as GraphQL gives it (nulls for omitted lists) → the rules' input. */
function windowInputOf(input: MaintenanceWindowInput): WindowPolicyInput {
  return {
    name: input.name,
    kind: input.kind,
    timeZone: input.timeZone ?? null,
    clusterSelector: input.clusterSelector ?? null,
    weekly: input.weekly ?? null,
    cron: input.cron ?? null,
    ranges: input.ranges ?? null,
  };
}

function windowStateOf(decision: WindowDecision) {
  return { open: decision.open, reason: decision.reason, policy: decision.policy, until: decision.until };
}

/** The registered clusters' labels (`local` has none). */
async function labelsByCluster(ctx: GraphQLContext): Promise<Map<string, Record<string, string>>> {
  return new Map((await portsHere(ctx.domain).registered()).map((c) => [c.name, c.labels]));
}

/**
 * The clusters of a staged rollout's wave (Rollout.targets(wave)): BAD_USER_INPUT naming the rollout's waves when it
 * has no such wave, or none at all (not staged).
 */
export async function clustersOfWave(ctx: GraphQLContext, rolloutId: string, wave: string): Promise<readonly string[]> {
  const run = rolloutId === 'dry-run' ? undefined : await ctx.domain.rollouts.runs.runOf(rolloutId);
  const found = run?.waves.find((w) => w.name === wave);
  if (found) return found.clusters;
  const shown = JSON.stringify(wave.slice(0, 63));
  if (!run) throw new ValidationError('wave', `rollout ${rolloutId} is not staged: it has no wave ${shown}`);
  throw new ValidationError('wave', `rollout ${rolloutId} has no wave ${shown} (its waves: ${run.waves.map((w) => w.name).join(', ')})`);
}

/** approveGate / rejectGate: the caller's decision, kept with its token id and role (StagedRuns.decide). */
async function decideGate(
  ctx: GraphQLContext,
  verdict: 'APPROVE' | 'REJECT',
  args: { rolloutId: string; gate: string; comment?: string | null },
): Promise<GateView> {
  const request = { rolloutId: requireId(args.rolloutId), gateKey: gateKeyOf(args.gate), verdict, comment: optionalText(args.comment) ?? null };
  return ctx.domain.rollouts.runs.decide({ ...request, ...deciderOf(ctx.principal) }, new Date());
}

export const wavesResolvers: Resolvers = {
  Query: {
    maintenanceWindows: (_, __, ctx) => ctx.domain.rollouts.windows.list(),
  },
  MemberCluster: {
    maintenanceWindow: async (cluster, _, ctx) => {
      const labels = Object.fromEntries(cluster.labels.map((l) => [l.key, l.value]));
      return windowStateOf(await ctx.domain.rollouts.windows.decide(labels, new Date()));
    },
  },
  Mutation: {
    createMaintenanceWindow: (_, args, ctx) => ctx.domain.rollouts.windows.create(windowInputOf(args.input)),
    updateMaintenanceWindow: (_, args, ctx) => ctx.domain.rollouts.windows.update(windowInputOf(args.input)),
    deleteMaintenanceWindow: (_, args, ctx) => ctx.domain.rollouts.windows.delete(args.name),
    approveGate: (_, args, ctx) => decideGate(ctx, 'APPROVE', args),
    rejectGate: (_, args, ctx) => decideGate(ctx, 'REJECT', args),
    retryGate: (_, args, ctx) => ctx.domain.rollouts.retryGate(requireId(args.rolloutId), gateKeyOf(args.gate)),
  },
  Gate: gateFields,
  AnalysisRun: analysisRunFields,
  BumpPayload: {
    wavePlan: async (payload, _, ctx) => {
      const result = payload as { run?: FrozenRun; rollout: { id: string }; dryRun: boolean };
      if (result.dryRun) return result.run ? wavePlanOf(result.run) : null;
      const stored = await ctx.domain.rollouts.runs.runOf(result.rollout.id);
      return stored ? wavePlanOf(stored) : null;
    },
  },
  Rollout: {
    startedBy: async (rollout, _, ctx) => {
      if (rollout.id === 'dry-run') return null;
      // The rollout's own (every rollout launched since it is kept), else its run's (staged rollouts written before).
      const startedBy = rollout.startedBy ?? (await ctx.domain.rollouts.runs.runOf(rollout.id))?.startedBy ?? null;
      return startedBy === null ? null : tokenName(ctx, startedBy);
    },
    wavePlan: async (rollout, _, ctx) => {
      if (rollout.id === 'dry-run') return null;
      const stored = await ctx.domain.rollouts.runs.runOf(rollout.id);
      return stored ? wavePlanOf(stored) : null;
    },
    gates: async (rollout, _, ctx) => (rollout.id === 'dry-run' ? [] : ctx.domain.rollouts.gatesOf(rollout, new Date())),
    gate: async (rollout, args, ctx) =>
      rollout.id === 'dry-run' ? null : ((await ctx.domain.rollouts.gatesOf(rollout, new Date())).find((g) => g.row.key === gateKeyOf(args.key)) ?? null),
    // The step the engine would take now, computed from the same rows it reads (nothing is written here).
    waitingFor: async (rollout, _, ctx) => {
      if (rollout.state !== 'PROGRESSING') return null;
      const { runs, windows, targetGates } = ctx.domain.rollouts;
      const run = await runs.runOf(rollout.id);
      const now = new Date();
      // A rollout without waves waits on the analysis or the gate between its targets (ADR 0071), if any, or on targets
      // of its selection down outside it.
      if (!run) return (await targetGates?.waiting(rollout)) ?? (await stepGateWaiting(runs, rollout, now)) ?? heldBackBy(rollout);
      const [gates, policies, labels, targets, registered] = await Promise.all([
        runs.gates(rollout.id, now),
        windows.policies(),
        labelsByCluster(ctx),
        ctx.domain.rollouts.allTargets(rollout.id),
        ctx.domain.clusters?.list({}) ?? [],
      ]);
      const health = new Map(registered.map((c) => [c.name, c.health.state]));
      const { window } = stagedAdmission(run, health, rollout.engineState.unreachableSince ?? {}, now, (cluster) =>
        decideWindow(policies, labels.get(cluster) ?? {}, now),
      );
      const { step } = decideStage({ run, gates, accepted: new Set(rollout.engineState.acceptedWaves ?? []), now, window }, targets);
      if (step.do === 'wait') return step.reason;
      return step.do === 'open-gate' ? `gate ${step.gate} is opening` : heldBackBy(rollout);
    },
  },
};

/** What the engine noted on its last admission pass: targets down outside the rollout took every free slot (attack 25, F5). */
function heldBackBy(rollout: Rollout): string | null {
  const down = rollout.engineState.downOutside ?? 0;
  if (down <= 0) return null;
  return `${down} target${down === 1 ? '' : 's'} of its selection ${down === 1 ? 'is' : 'are'} unavailable outside the rollout and take${down === 1 ? 's' : ''} the free slots of maxUnavailable ${rollout.strategy.maxUnavailable}: more are admitted once ${down === 1 ? 'it is' : 'they are'} back`;
}
