import { stepDue, stepTargets, type TargetGates, type TargetGateStep, targetGateKey, targetGateStep } from '../domain/gates/targetGates.js';
import { nextAnalysisStep, type TargetAnalysisSpec } from '../domain/kinds/strategy.js';
import { clusterOf, targetKey } from '../domain/ports.js';
import type { Rollout, RolloutTarget } from '../domain/RolloutService.js';
import type { RolloutView } from '../domain/RolloutView.js';
import { ACTIVE_ROLLOUT_STATES } from '../domain/rolloutStates.js';
import type { GateView } from '../domain/waves/StagedRuns.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { AnalysisGateRef, AnalysisGates } from './AnalysisGates.js';
import { latestAttemptProgress, measuringText } from './gate.js';
import { parseAnalysisGateConfig, versionArg } from './gateTypes.js';
import type { AnalysisRunRecord, AnalysisStore } from './model.js';
import type { ResolvedArgs } from './template.js';

/**
 * Analysis between the targets of a rollout without waves (issue 33, ADR 0071), over the analysis gate service (ADR
 * 0067): after the first n targets of each step were admitted and are done, the step's analysis (`targets:<n>`) runs
 * before any more target is admitted. Its built-in arguments: `version` and `baselineVersion` (tags, as for a wave's
 * gate: the targets not yet upgraded still run the baseline, the control group), `cluster`, `namespace`, `name` and
 * `target` (`namespace/name`) of the step's targets (each a regex alternation, for `=~`), and `wave` = the step's key.
 * Every answer is read from the analysis tables, so a new leader answers the same and continues the run a dead one
 * left measuring.
 */

/** How soon a pass looks again at a step whose analysis measures (woken at once when it decides). */
const RELOOK_MS = 30_000;

export class TargetAnalysisGates implements TargetGates {
  constructor(
    private readonly analysis: AnalysisGates,
    private readonly store: Pick<AnalysisStore, 'runsOf' | 'gateRuns' | 'measurementTally'>,
  ) {}

  async step(rollout: Rollout, view: RolloutView, now: Date): Promise<TargetGateStep> {
    const spec = rollout.strategy.analysis;
    let passed = rollout.engineState.analysisPassed ?? 0;
    if (!spec) return { do: 'admit', cap: Infinity, passed };
    const config = parseAnalysisGateConfig(spec.config, 'strategy.analysis.config');
    for (;;) {
      const due = stepDue(spec, view, passed);
      if ('admit' in due) return { do: 'admit', cap: due.admit, passed };
      const { step } = due;
      const key = targetGateKey(step);
      const batch = stepTargets(view, passed, step);
      const ref = refOf(rollout, key, batch);
      const progress = await this.analysis.progress(ref, { errorFails: config.errorFails });
      if (progress.state === 'PASSED') {
        passed = step;
        continue;
      }
      if (progress.state === 'FAILED') return { do: 'fail', message: `analysis ${key}: ${progress.reason}`, passed };
      if (progress.holds) return { do: 'hold', key, message: `analysis ${key}: ${progress.reason}`, passed };
      // Not opened yet, or measuring: opened once across leaders (or continued here), measured in the background.
      await this.analysis.open(ref, config.template, { ...argsOf(rollout, key, batch), ...config.args });
      return { do: 'wait', until: new Date(now.getTime() + RELOOK_MS), passed };
    }
  }

  async gates(rollout: Rollout, now: Date): Promise<GateView[]> {
    const spec = rollout.strategy.analysis;
    if (!spec) return [];
    const byKey = new Map<string, AnalysisRunRecord[]>();
    for (const run of await this.store.runsOf(rollout.id)) {
      if (run.gateKey === null || targetGateStep(run.gateKey) === undefined) continue;
      byKey.set(run.gateKey, [...(byKey.get(run.gateKey) ?? []), run]);
    }
    const errorFails = parseAnalysisGateConfig(spec.config, 'strategy.analysis.config').errorFails;
    return [...byKey].sort(([a], [b]) => targetGateStep(a)! - targetGateStep(b)!).map(([key, runs]) => gateViewOf(rollout, spec, key, runs, errorFails, now));
  }

  async waiting(rollout: Rollout): Promise<string | undefined> {
    if (!rollout.strategy.analysis) return undefined;
    // A rollout without waves opens one step at a time: at most one of its steps' runs is RUNNING.
    const run = (await this.store.runsOf(rollout.id)).find((r) => r.phase === 'RUNNING' && r.gateKey !== null && targetGateStep(r.gateKey) !== undefined);
    if (!run) return undefined;
    return `analysis ${run.gateKey}: ${measuringText(run, await this.store.measurementTally(run.id))}`;
  }

  async release(rollout: Rollout): Promise<void> {
    await this.analysis.cancelRollout(rollout.id, `rollout ${rollout.id} is ${rollout.state}${rollout.message ? `: ${rollout.message}` : ''}`);
  }

  async retry(rollout: Rollout, key: string, now: Date): Promise<GateView> {
    const spec = rollout.strategy.analysis;
    const step = targetGateStep(key);
    if (!spec || step === undefined) throw new NotFoundError(`rollout ${rollout.id} has no gate ${key} (no analysis between its targets)`);
    if (nextAnalysisStep(spec, Infinity, step - 1) !== step) {
      throw new NotFoundError(`rollout ${rollout.id} has no gate ${key} (it analyses after ${describeSteps(spec)} targets)`);
    }
    const runs = await this.store.gateRuns(rollout.id, key);
    const latest = runs.at(-1);
    if (!latest) throw new ConflictError(`gate ${key} of rollout ${rollout.id} has not opened yet`);
    if (!ACTIVE_ROLLOUT_STATES.includes(rollout.state))
      throw new ConflictError(`rollout ${rollout.id} is ${rollout.state}: its gates can no longer be retried`);
    const errorFails = parseAnalysisGateConfig(spec.config, 'strategy.analysis.config').errorFails;
    const before = gateViewOf(rollout, spec, key, runs, errorFails, now);
    if (before.progress.state !== 'FAILED' && !before.progress.holds) {
      throw new ConflictError(
        `gate ${key} is ${before.progress.state} (${before.progress.reason}): only a failed, inconclusive or errored gate can be retried`,
      );
    }
    await this.analysis.retry({ rolloutId: rollout.id, gateKey: key, cluster: latest.cluster, target: latest.target, wave: null });
    return gateViewOf(rollout, spec, key, await this.store.gateRuns(rollout.id, key), errorFails, now);
  }
}

function describeSteps(spec: TargetAnalysisSpec): string {
  return [...(spec.after?.length ? [spec.after.join(', ')] : []), ...(spec.every ? [`every ${spec.every}`] : [])].join(' and ');
}

const unique = (values: readonly string[]) => [...new Set(values)];

function refOf(rollout: Rollout, key: string, batch: readonly RolloutTarget[]): AnalysisGateRef {
  return {
    rolloutId: rollout.id,
    gateKey: key,
    cluster: unique(batch.map(clusterOf)).join(','),
    target: batch.map(targetKey).join(',') || null,
    wave: null,
  };
}

function argsOf(rollout: Rollout, key: string, batch: readonly RolloutTarget[]): ResolvedArgs {
  return {
    version: versionArg(rollout.toVersion ?? ''),
    ...(rollout.fromVersion ? { baselineVersion: versionArg(rollout.fromVersion) } : {}),
    cluster: unique(batch.map(clusterOf)).join('|'),
    namespace: unique(batch.map((t) => t.namespace)).join('|'),
    name: unique(batch.map((t) => t.name)).join('|'),
    target: unique(batch.map((t) => (t.namespace ? `${t.namespace}/${t.name}` : t.name))).join('|'),
    wave: key,
  };
}

/** A step's analysis as the API shows gates: type ANALYSIS, its config, its latest attempt's state. */
function gateViewOf(rollout: Rollout, spec: TargetAnalysisSpec, key: string, runs: readonly AnalysisRunRecord[], errorFails: boolean, now: Date): GateView {
  const latest = runs.at(-1)!;
  const progress = latestAttemptProgress(latest, { errorFails });
  const ended = progress.state !== 'WAITING' ? (latest.finishedAt ?? now) : null;
  return {
    row: {
      id: `${rollout.id}:${key}`,
      rolloutId: rollout.id,
      key,
      type: 'ANALYSIS',
      config: JSON.stringify(spec.config),
      state: progress.state,
      reason: progress.reason,
      openedAt: runs[0]!.startedAt,
      endedAt: ended,
    },
    decisions: [],
    attempts: [],
    progress,
  };
}
