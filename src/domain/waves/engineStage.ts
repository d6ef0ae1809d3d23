import { clusterOf } from '../ports.js';
import type { RolloutTarget } from '../RolloutService.js';
import type { GateSpec } from './strategy.js';
import { type ClusterProgress, type GateProgress, gateKey, nextStep, type RunFacts, type RunStep } from './progress.js';
import type { GateView, StoredRun, WaveUpdate } from './StagedRuns.js';

/**
 * A staged rollout's engine pass (issue 30, ADR 0065), decided from what is recorded: each cluster's outcome is
 * aggregated from its targets' recorded states (a target is SUCCEEDED only once the engine observed it converged
 * after writing its change), the gates from their kept rows, the waves from the frozen plan. `nextStep` (progress.ts)
 * says what the run does next; this module turns that into what the engine does: which clusters' targets it may admit,
 * which gate it opens, when it looks again, and how the waves' recorded states move.
 */

/** What the engine reads before deciding (RolloutEngine.stageOf). */
export interface StagedPass {
  run: StoredRun;
  gates: readonly GateView[];
  /** Waves whose failure a user accepted by resuming the run it paused (EngineState.acceptedWaves). */
  accepted: ReadonlySet<string>;
  now: Date;
  /** Whether the cluster may be admitted now (maintenance windows), why not, and until when; absent: always. */
  window?: RunFacts['window'];
}

export type StageDecision =
  /** Admit only targets of these clusters (those the step starts and those already under way). */
  | { do: 'admit in'; clusters: ReadonlySet<string>; wakeAt: Date | null; waiting: string | null }
  | { do: 'open gate'; key: string; spec: GateSpec }
  | { do: 'succeed'; message: string | null }
  | { do: 'pause'; wave: string; message: string }
  | { do: 'fail'; message: string; rollBack: boolean };

/**
 * A cluster's targets counted by what decides its outcome. RolloutView keeps one per cluster as the engine records
 * target changes, so that a staged pass reads each cluster's outcome instead of aggregating every target of the
 * rollout again (bench waves: at 100 runs x 1,000 clusters that recount was most of the service's CPU).
 */
export interface ClusterTally {
  /** Targets not SKIPPED or CANCELLED. */
  changing: number;
  pending: number;
  inFlight: number;
  failed: number;
  /** The latest `finishedAt` of its targets (ms; 0: none). A target's end never moves back, so it only grows. */
  endedAt: number;
}

/** The cluster's tally in `tallies`, a new one added when it has none yet. */
export function tallyIn(tallies: Map<string, ClusterTally>, cluster: string): ClusterTally {
  const found = tallies.get(cluster);
  if (found) return found;
  const tally = { changing: 0, pending: 0, inFlight: 0, failed: 0, endedAt: 0 };
  tallies.set(cluster, tally);
  return tally;
}

/** Adds (`by` 1) or takes away (-1) one target's recorded state from its cluster's tally. */
export function countTarget(tally: ClusterTally, target: Pick<RolloutTarget, 'state' | 'finishedAt'>, by: 1 | -1): void {
  if (by === 1) tally.endedAt = Math.max(tally.endedAt, target.finishedAt?.getTime() ?? 0);
  if (target.state === 'SKIPPED' || target.state === 'CANCELLED') return;
  tally.changing += by;
  if (target.state === 'PENDING') tally.pending += by;
  else if (target.state === 'PROGRESSING') tally.inFlight += by;
  else if (target.state === 'FAILED') tally.failed += by;
}

/**
 * A cluster's outcome from its tally: a target counts as done only once recorded so (observed converged after its
 * change was written), so a stale Ready cannot end a cluster.
 */
export function outcomeOf(c: ClusterTally): ClusterProgress {
  const ended = c.endedAt > 0 ? new Date(c.endedAt) : null;
  if (c.changing === 0) return { outcome: 'SKIPPED', endedAt: ended };
  if (c.pending === c.changing) return { outcome: 'PENDING' };
  if (c.pending + c.inFlight > 0) return { outcome: 'ACTIVE', ...(c.pending > 0 && { pendingTargets: true }) };
  return { outcome: c.failed > 0 ? 'FAILED' : 'SUCCEEDED', endedAt: ended };
}

/** Each cluster's progress from its targets' recorded states (one pass of counters; the API and the metrics ask it). */
export function clusterOutcomes(targets: readonly RolloutTarget[]): Map<string, ClusterProgress> {
  const tallies = new Map<string, ClusterTally>();
  for (const t of targets) countTarget(tallyIn(tallies, clusterOf(t)), t, 1);
  const out = new Map<string, ClusterProgress>();
  for (const [cluster, tally] of tallies) out.set(cluster, outcomeOf(tally));
  return out;
}

/** The facts `nextStep` decides from; a wave whose failure was accepted tolerates every failure, its gates pass. */
export function runFacts(pass: StagedPass, clusters: ReadonlyMap<string, ClusterProgress>): RunFacts {
  const { run, accepted } = pass;
  const waves = run.waves.map((w) => (accepted.has(w.name) ? { ...w, maxFailures: w.clusters.length, mandatory: false } : w));
  const gates = new Map<string, GateProgress>();
  for (const g of pass.gates) {
    const wave = g.row.key.slice(g.row.key.indexOf(':') + 1);
    gates.set(
      g.row.key,
      (g.progress.state === 'FAILED' || g.progress.holds) && accepted.has(wave)
        ? { state: 'PASSED', reason: `${g.progress.state === 'FAILED' ? 'failed' : 'held'}, accepted: ${g.progress.reason}` }
        : g.progress,
    );
  }
  const gatePositions = new Set(
    run.waves.flatMap((w) => [w.before ? gateKey('before', w.name) : null, w.after ? gateKey('after', w.name) : null].filter((k): k is string => k !== null)),
  );
  return {
    plan: { waves, excluded: run.excluded },
    clusters,
    gates,
    gatePositions,
    window: pass.window ?? (() => ({ open: true, reason: '', until: null })),
    failurePolicy: run.failurePolicy,
    now: pass.now,
  };
}

/**
 * The engine's decision for a staged pass, and the waves' state changes to record first; from the rollout's targets,
 * or from each cluster's outcome as the engine's view keeps them (RolloutView.clusterOutcomes).
 */
export function decideStage(
  pass: StagedPass,
  targets: readonly RolloutTarget[] | ReadonlyMap<string, ClusterProgress>,
): { decision: StageDecision; waves: WaveUpdate[]; step: RunStep } {
  const clusters = Array.isArray(targets) ? clusterOutcomes(targets) : (targets as ReadonlyMap<string, ClusterProgress>);
  const facts = runFacts(pass, clusters);
  const step = nextStep(facts);
  const active = new Set<string>();
  let admitting = false;
  for (const [cluster, progress] of clusters) {
    if (progress.outcome !== 'ACTIVE') continue;
    active.add(cluster);
    admitting ||= progress.pendingTargets === true;
  }
  return { decision: decisionOf(pass, step, active, admitting), waves: waveUpdates(pass, facts, step), step };
}

/** `admitting`: a cluster under way still has targets to admit (the kind's strategy inside it admits them in turn). */
function decisionOf(pass: StagedPass, step: RunStep, active: Set<string>, admitting: boolean): StageDecision {
  switch (step.do) {
    case 'admit':
      return { do: 'admit in', clusters: new Set([...active, ...step.clusters]), wakeAt: null, waiting: null };
    case 'wait':
      // While a cluster under way has targets left to admit, the run does not only wait: with none of its targets in
      // flight (its first ones done, the next not admitted yet) a pass that slept here would never be woken again.
      return { do: 'admit in', clusters: active, wakeAt: step.until, waiting: admitting ? null : step.reason };
    case 'open-gate': {
      const [position, wave] = [step.gate.slice(0, step.gate.indexOf(':')), step.gate.slice(step.gate.indexOf(':') + 1)];
      const spec = pass.run.waves.find((w) => w.name === wave)?.[position === 'before' ? 'before' : 'after'];
      return { do: 'open gate', key: step.gate, spec: spec! };
    }
    case 'succeed': {
      // A run that left clusters out says which (fleet#3828, an offline cluster skipped): not only their targets do.
      const notes = [
        step.toleratedFailures.length > 0 ? `tolerated failures in ${step.toleratedFailures.join(', ')}` : '',
        step.skipped.length > 0 ? `skipped (each target says why): ${namesOf(step.skipped)}` : '',
        pass.run.excluded.length > 0 ? `excluded (in no wave): ${namesOf(pass.run.excluded)}` : '',
      ].filter(Boolean);
      return { do: 'succeed', message: notes.length > 0 ? notes.join('; ') : null };
    }
    case 'pause':
      return step.held
        ? { do: 'pause', wave: step.wave, message: `${step.reason}; retry the gate, resume to accept it and go on, or abort` }
        : { do: 'pause', wave: step.wave, message: `${step.reason}; resume to accept it and go on with the next wave, or abort` };
    case 'roll-back':
      return { do: 'fail', message: `${step.reason}; rolling back what the run changed`, rollBack: true };
    case 'fail':
      return { do: 'fail', message: step.reason, rollBack: false };
  }
}

/** Cluster names for a message: the first few, and how many more (a run may leave out a thousand). */
function namesOf(clusters: readonly string[], shown = 10): string {
  return clusters.length > shown ? `${clusters.slice(0, shown).join(', ')} and ${clusters.length - shown} more` : clusters.join(', ');
}

/**
 * How the waves' recorded states move with this step: the waves before the step's wave have ended (SUCCEEDED, or
 * FAILED when their failures went past what they tolerate or a gate failed), the step's wave runs (or ended FAILED on
 * pause, roll-back), and every reached wave ended when the run ends.
 */
function waveUpdates(pass: StagedPass, facts: RunFacts, step: RunStep): WaveUpdate[] {
  const { run } = pass;
  const names = run.waves.map((w) => w.name);
  const stepWave = 'wave' in step && step.wave ? step.wave : step.do === 'open-gate' ? step.gate.slice(step.gate.indexOf(':') + 1) : null;
  const current = stepWave === null ? names.length : names.indexOf(stepWave);
  // A gate holding the run (an inconclusive analysis) is no wave failure: the wave stays RUNNING while paused.
  const failedHere = (step.do === 'pause' && !step.held) || step.do === 'roll-back';
  const updates: WaveUpdate[] = [];
  run.waves.forEach((wave, ordinal) => {
    const was = run.waveStates[ordinal]?.state ?? 'PENDING';
    let to: WaveUpdate['to'] = was;
    let reason: string | null = run.waveStates[ordinal]?.reason ?? null;
    if (ordinal < current || (ordinal === current && failedHere)) {
      const failure = ordinal === current && failedHere ? ('reason' in step ? step.reason : null) : waveFailure(facts, pass, wave.name);
      to = failure ? 'FAILED' : 'SUCCEEDED';
      reason = failure;
    } else if (ordinal === current) to = 'RUNNING';
    if ((was === 'SUCCEEDED' || was === 'FAILED') && to !== was) return; // an ended wave stays as recorded
    if (to !== was) updates.push({ ordinal, name: wave.name, clusters: wave.clusters, to, reason });
  });
  return updates;
}

/** Why a wave the run went past failed (CONTINUE, or a failure accepted on resume); null when it did not. */
function waveFailure(facts: RunFacts, pass: StagedPass, name: string): string | null {
  const wave = pass.run.waves.find((w) => w.name === name)!;
  const failed = wave.clusters.filter((c) => facts.clusters.get(c)?.outcome === 'FAILED');
  const gateFailed = pass.gates.find((g) => g.row.key.endsWith(`:${name}`) && g.progress.state === 'FAILED');
  if (gateFailed) return `gate ${gateFailed.row.key}: ${gateFailed.progress.reason}`;
  if (failed.length > 0 && (wave.mandatory || failed.length > wave.maxFailures)) return `${failed.length} cluster(s) failed (${failed.join(', ')})`;
  return null;
}
