import { LOCAL_CLUSTER } from './clusters/model.js';
import { clusterField, clusterOf } from './ports.js';
import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';
import { MAX_IDEMPOTENCY_KEY } from './kinds/cause.js';
import type { RolloutPlan } from './kinds/index.js';
import { MAX_ANALYSIS_STEPS, nextAnalysisStep, TARGET_GATE_TYPES, type TargetAnalysisSpec, type TargetGateSpec } from './kinds/strategy.js';
import type { IdempotencyKeyRef } from './historyPort.js';
import type { Cause, Rollout, RolloutService } from './RolloutService.js';
import { checkReplay, type LaunchGuard } from './launchRules.js';
import { type ClusterPorts, portsHere } from './clusterSelection.js';
import { type GateTypes, gateTypeOf } from './gates/registry.js';
import { excludedReason, type FrozenRun, freezeRun, type WaveStrategy } from './waves/strategy.js';

export type { RolloutPlan } from './kinds/index.js';

export interface LaunchRequest {
  plan: RolloutPlan;
  cause: Cause;
  /** The caller's key in the caller's scope (see IdempotencyKeyRef): a retry with it returns the first rollout. */
  idempotencyKey?: IdempotencyKeyRef | null;
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
  /**
   * A rollback's original while still active: aborted in the creating transaction, so that a refused launch leaves it
   * running (issue 34, finding 4). Its targets do not count as overlapping; no other rollout's are taken over.
   */
  takeOver?: string;
  /** The kind's own rule over its active rollouts, decided under the launch lock (not run for dry runs). */
  guard?: LaunchGuard;
  /** A staged rollout's waves (issue 30): planned over the plan's clusters and frozen with the rollout. */
  staged?: StagedLaunch;
  /** Who starts the rollout (starterOf its caller's scope; `rollplane` for the engine's), kept with it: Rollout.startedBy. */
  startedBy?: string | null;
}

/** What a staged launch plans its waves from (stagedLaunch). */
export interface StagedLaunch {
  strategy: WaveStrategy;
  /** The registered clusters with their labels, as now. */
  registered: readonly { name: string; labels: Record<string, string> }[];
  /** Who launches (token id or `anonymous`). */
  startedBy: string | null;
}

/**
 * Who a caller of the given idempotency scope is, as a rollout keeps its starter (Rollout.startedBy, RolloutRun.startedBy):
 * `token:<id>` → the token's id; any other scope as it is (`anonymous` with authentication off, `rollplane` the engine).
 */
export function starterOf(idempotencyScope: string): string {
  return idempotencyScope.startsWith('token:') ? idempotencyScope.slice('token:'.length) : idempotencyScope;
}

/**
 * The `staged` part of a kind's launch request for a bump's `waveStrategy` (nothing when it has none): the kinds pass
 * it through without knowing waves.
 */
export async function stagedLaunch(
  domain: { clusterPorts?: ClusterPorts | undefined },
  strategy: WaveStrategy | undefined,
  idempotencyScope: string,
): Promise<{ staged?: StagedLaunch }> {
  if (!strategy) return {};
  const registered = await portsHere(domain).registered();
  return { staged: { strategy, registered, startedBy: starterOf(idempotencyScope) } };
}

export interface PlanItem {
  /** The member cluster of the target; absent: `local` (ADR 0054). */
  cluster?: string;
  namespace: string;
  name: string;
  fromVersion: string | null;
  toVersion: string;
  action: 'change' | 'skip';
  reason: string | null;
}

/**
 * A plan's items grouped by member cluster (what a plan and a dry run show once a rollout spans clusters): `local` first,
 * then the others by name; each group in admission order.
 */
export function planByCluster(items: readonly PlanItem[]): { cluster: string; items: PlanItem[] }[] {
  const groups = new Map<string, PlanItem[]>();
  for (const item of items) {
    const cluster = clusterOf(item);
    const group = groups.get(cluster);
    if (group) group.push(item);
    else groups.set(cluster, [item]);
  }
  return [...groups]
    .sort(([a], [b]) => (a === LOCAL_CLUSTER ? -1 : b === LOCAL_CLUSTER ? 1 : a.localeCompare(b)))
    .map(([cluster, group]) => ({ cluster, items: group }));
}

export interface LaunchResult {
  rollout: Rollout;
  plan: PlanItem[];
  /** A staged launch's frozen waves (also on a dry run, where nothing is stored). */
  run?: FrozenRun;
  created: boolean;
  dryRun: boolean;
}

/**
 * A staged request's frozen run over the plan's clusters, and the plan with the targets of excluded clusters SKIPPED
 * (they are in no wave: never admitted, and the plan says why). Unstaged requests pass unchanged.
 */
function staged(request: LaunchRequest, types: () => GateTypes): { run?: FrozenRun; plan: RolloutPlan } {
  const { staged: s, plan } = request;
  if (!s) return { plan };
  const labels = new Map(s.registered.map((c) => [c.name, c.labels]));
  const clusters = [...new Set(plan.targets.map(clusterOf))].map((name) => ({ name, labels: labels.get(name) ?? {} }));
  const run = freezeRun(s.strategy, clusters, s.startedBy, undefined, types());
  if (run.excluded.length === 0) return { run, plan };
  const excluded = new Set(run.excluded);
  const targets = plan.targets.map((t) =>
    excluded.has(clusterOf(t)) && !t.skipReason ? { ...t, skipReason: excludedReason(clusterOf(t)), note: undefined } : t,
  );
  return { run, plan: { ...plan, targets } };
}

/**
 * `strategy.analysis` (analysis between targets, ADR 0071) is checked at submit as an ANALYSIS gate's config is (the
 * template, its arguments, a Prometheus to ask), and only for a rollout without waves: a staged one has its gates.
 * `field` is where the kind's input took it (KindContract.analysisField).
 */
export function checkTargetAnalysis(request: LaunchRequest, types: () => GateTypes, field = 'input.strategy.analysis'): void {
  const analysis = request.plan.strategy.analysis;
  if (!analysis) return;
  if (request.staged) throw new ValidationError(field, 'is for a rollout without waves: a staged rollout analyses before or after its waves (gates)');
  checkSteps(analysis, request, field, { steps: 'analyses', verb: 'measures', often: 'measure' });
  gateTypeOf('ANALYSIS', `${field}.config`, types()).check(analysis.config, `${field}.config`);
}

/**
 * `strategy.gate` (a gate between targets, issue 30, ADR 0071 addendum) is checked at submit as a wave gate's config is
 * (its type's `check`), only for a rollout without waves, and never beside `strategy.analysis` (one of them: a step
 * would otherwise need two gates under one key). Returns the request with the gate's config as its type keeps it.
 * `field` is where the kind's input took it.
 */
export function checkTargetGate(request: LaunchRequest, types: () => GateTypes, field = 'input.strategy.gate'): LaunchRequest {
  const gate = request.plan.strategy.gate;
  if (!gate) return request;
  if (request.plan.strategy.analysis) {
    throw new ValidationError(field, 'is not taken beside `analysis`: a rollout has an analysis or a gate between its targets, not both');
  }
  if (request.staged) throw new ValidationError(field, 'is for a rollout without waves: a staged rollout has its gates before or after its waves');
  if (gate.type === 'ANALYSIS') throw new ValidationError(`${field}.type`, 'ANALYSIS between targets is `analysis` (TargetAnalysisInput), not a gate');
  if (!(TARGET_GATE_TYPES as readonly string[]).includes(gate.type)) {
    throw new ValidationError(`${field}.type`, `"${gate.type.slice(0, 40)}" is not a gate between targets (known: ${TARGET_GATE_TYPES.join(', ')})`);
  }
  checkSteps(gate, request, field, { steps: 'gates', verb: 'opens', often: 'open' });
  // `excludeStarter: true` is taken (every rollout keeps who started it: Rollout.startedBy), but not the default here:
  // a rollout without waves is what a single-person setup launches, where the one token that starts it must also be
  // able to approve its gates; a staged rollout's gates keep the approval's own default (true).
  const given = gate.type === 'APPROVAL' && gate.config.excludeStarter == null ? { ...gate.config, excludeStarter: false } : gate.config;
  const config = gateTypeOf(gate.type, `${field}.type`, types()).check(given, `${field}.config`);
  return { ...request, plan: { ...request.plan, strategy: { ...request.plan.strategy, gate: { ...gate, config } } } };
}

/**
 * Each step is a gate `Rollout.gates` lists (and for an analysis a run with its measurements): bounded like `after`.
 * Steps run between targets, after fewer than all of them: one that none reaches would let the rollout succeed
 * unchecked, saying nothing (attack 19, F4: `after: [100]` on 8 pools, `every: 8` on 8, any one-target rollout).
 */
function checkSteps(
  spec: TargetAnalysisSpec | TargetGateSpec,
  request: LaunchRequest,
  field: string,
  words: { steps: string; verb: string; often: string },
): void {
  const changing = request.plan.targets.filter((t) => !t.skipReason).length;
  let steps = 0;
  for (let step = nextAnalysisStep(spec, changing, 0); step !== undefined; step = nextAnalysisStep(spec, changing, step)) {
    if (++steps > MAX_ANALYSIS_STEPS) {
      throw new ValidationError(
        field,
        `makes more than ${MAX_ANALYSIS_STEPS} ${words.steps} over ${changing} targets: ${words.often} less often (a larger \`every\`)`,
      );
    }
  }
  if (steps === 0 && changing > 0) {
    const given = [spec.every ? `every ${spec.every}` : '', spec.after ? `after ${spec.after.join(', ')}` : ''].filter(Boolean).join(', ');
    throw new ValidationError(
      field,
      `never ${words.verb}: its steps run between targets, after fewer than all ${changing} changing ones, and none of its (${given}) does`,
    );
  }
}

/**
 * What gates and `strategy.analysis` refer to, resolved before they are checked and frozen (GateType.resolve: an
 * ANALYSIS config's `templateName` → the stored template's text, ADR 0071). Requests that refer to nothing pass as
 * they are, without reading anything.
 */
async function resolveReferences(request: LaunchRequest, types: () => GateTypes, analysisField: string): Promise<LaunchRequest> {
  const analysis = request.plan.strategy.analysis;
  const staged = request.staged;
  if (!analysis && !staged?.strategy.waves.some((w) => w.before || w.after)) return request;
  const all = types();
  const typeOf = (type: string) => (Object.hasOwn(all, type) ? all[type] : undefined);
  const resolveGate = async <G extends { type: string; config?: unknown } | null | undefined>(gate: G, field: string): Promise<G> => {
    const resolve = gate ? typeOf(gate.type)?.resolve : undefined;
    return gate && resolve ? { ...gate, config: await resolve(gate.config, `${field}.config`) } : gate;
  };
  let plan = request.plan;
  const resolveAnalysis = analysis ? typeOf('ANALYSIS')?.resolve : undefined;
  if (analysis && resolveAnalysis) {
    const config = (await resolveAnalysis(analysis.config, `${analysisField}.config`)) as Record<string, unknown>;
    plan = { ...plan, strategy: { ...plan.strategy, analysis: { ...analysis, config } } };
  }
  if (!staged) return { ...request, plan };
  const waves = await Promise.all(
    staged.strategy.waves.map(async (wave, i) => ({
      ...wave,
      before: await resolveGate(wave.before, `input.waveStrategy.waves[${i}].before`),
      after: await resolveGate(wave.after, `input.waveStrategy.waves[${i}].after`),
    })),
  );
  return { ...request, plan, staged: { ...staged, strategy: { ...staged.strategy, waves } } };
}

/** The key a caller sent, in the caller's scope; null when it sent none. */
export function scopedKey(scope: string, key: string | null | undefined): IdempotencyKeyRef | null {
  return key == null ? null : { scope, key };
}

/**
 * The longest selector a rollout keeps (serialized). Every listing of rollouts returns it, and 900 names of 253
 * characters made 237 KB a rollout, which a viewer's cheap aliased query multiplied into gigabytes (issue 34, attack 11,
 * F2). 64 Ki characters still name about a thousand pools.
 */
export const MAX_SELECTOR_CHARS = 64 * 1024;

/** The scope of the engine's own keys (auto-rollback): no caller's scope can be it (callers' are `token:…`, `anonymous`). */
export const ENGINE_IDEMPOTENCY_SCOPE = 'rollplane';

function checkIdempotencyKey(key: IdempotencyKeyRef): void {
  if (key.key.length === 0 || key.key.length > MAX_IDEMPOTENCY_KEY) {
    throw new ValidationError('idempotencyKey', `must be 1 to ${MAX_IDEMPOTENCY_KEY} characters`);
  }
}

/** What tells a retry (same hash) from another request under the same key. */
function requestHashOf(kind: RolloutPlan['kind'], request: unknown): string {
  return fingerprint({ kind, request });
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

  async launch(given: LaunchRequest): Promise<LaunchResult> {
    // Read only for a request with an analysis or a gate between targets: where the kind's input takes it, for refusals.
    const between = given.plan.strategy.analysis || given.plan.strategy.gate;
    const analysisField = between ? this.rollouts.contracts[given.plan.kind].analysisField : '';
    const gateField = analysisField.replace(/analysis$/, 'gate');
    const request = checkTargetGate(await resolveReferences(given, () => this.rollouts.runs.types, analysisField), () => this.rollouts.runs.types, gateField);
    const { run, plan } = staged(request, () => this.rollouts.runs.types);
    checkTargetAnalysis(request, () => this.rollouts.runs.types, analysisField);
    const key = request.idempotencyKey ?? undefined;
    if (key !== undefined) checkIdempotencyKey(key);
    const selectorChars = JSON.stringify(plan.selector).length;
    if (selectorChars > MAX_SELECTOR_CHARS) {
      throw new ValidationError(
        'input',
        `selects its targets with ${selectorChars} characters of selector; at most ${MAX_SELECTOR_CHARS} are kept with a rollout (select by labels or namespaces rather than by hundreds of names)`,
      );
    }
    const items: PlanItem[] = plan.targets.map((t) => ({
      ...clusterField(t.cluster),
      namespace: t.namespace,
      name: t.name,
      fromVersion: t.fromVersion,
      toVersion: t.toVersion,
      action: t.skipReason ? 'skip' : 'change',
      reason: t.skipReason ?? t.note ?? null,
    }));
    const requestHash = requestHashOf(plan.kind, request.request);

    if (key !== undefined) {
      const existing = await this.replay(key, requestHash);
      if (existing) return { rollout: existing, plan: items, created: false, dryRun: request.dryRun === true };
    }
    const withRun = run ? { run } : {};
    if (request.dryRun) {
      return { rollout: this.preview(request), plan: items, created: false, dryRun: true, ...withRun };
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
        startedBy: request.startedBy ?? null,
        targets: plan.targets,
        ...withRun,
      },
      {
        supersede: request.supersede === true,
        ...(request.guard ? { guard: request.guard } : {}),
        ...(request.takeOver ? { takeOver: request.takeOver } : {}),
      },
    );
    return { rollout, plan: items, created, dryRun: false, ...withRun };
  }

  /**
   * The fast path of a retry, before any lock: the rollout `key` made if the same request (`kind`, `request`) made it;
   * CONFLICT if another did; undefined for a key not used yet.
   */
  async replayOf(key: IdempotencyKeyRef, kind: RolloutPlan['kind'], request: unknown): Promise<Rollout | undefined> {
    checkIdempotencyKey(key);
    return this.replay(key, requestHashOf(kind, request));
  }

  /**
   * The key's rollout if the same request made it; CONFLICT if another did. Two reads outside a transaction, in this
   * order: a rollout and its record commit together, so once the rollout is seen its record is too. Read the other way
   * round, a rollout committed (on any replica) between the two reads came without its record and passed for this
   * request's (attack finding: a retry was answered with another request's rollout, even of another kind).
   */
  private async replay(key: IdempotencyKeyRef, requestHash: string): Promise<Rollout | undefined> {
    const rollout = await this.rollouts.findByIdempotencyKey(key);
    if (!rollout) return undefined;
    checkReplay(key.key, requestHash, rollout.id, await this.rollouts.idempotencyRecord(key));
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
      idempotencyKey: request.idempotencyKey?.key ?? null,
      rollbackOfId: request.rollbackOfId ?? null,
      message: 'dry run: nothing was changed',
      engineState: {},
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      startedBy: request.startedBy ?? null,
    };
  }
}
