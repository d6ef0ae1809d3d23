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
 * Each cluster's progress from its targets' recorded states. One pass of counters over the targets (a staged pass
 * asks this every time, over every target of the rollout: at 1,000 clusters grouping them into lists first was most of
 * what staging cost, bench waves).
 */
export function clusterOutcomes(targets: readonly RolloutTarget[]): Map<string, ClusterProgress> {
  const counts = new Map<string, { changing: number; pending: number; inFlight: number; failed: number; endedAt: number }>();
  for (const t of targets) {
    const cluster = clusterOf(t);
    let c = counts.get(cluster);
    if (!c) {
      c = { changing: 0, pending: 0, inFlight: 0, failed: 0, endedAt: 0 };
      counts.set(cluster, c);
    }
    c.endedAt = Math.max(c.endedAt, t.finishedAt?.getTime() ?? 0);
    if (t.state === 'SKIPPED' || t.state === 'CANCELLED') continue;
    c.changing++;
    if (t.state === 'PENDING') c.pending++;
    else if (t.state === 'PROGRESSING') c.inFlight++;
    else if (t.state === 'FAILED') c.failed++;
  }
  const out = new Map<string, ClusterProgress>();
  for (const [cluster, c] of counts) {
    const ended = c.endedAt > 0 ? new Date(c.endedAt) : null;
    if (c.changing === 0) out.set(cluster, { outcome: 'SKIPPED', endedAt: ended });
    else if (c.pending === c.changing) out.set(cluster, { outcome: 'PENDING' });
    else if (c.pending + c.inFlight > 0) out.set(cluster, { outcome: 'ACTIVE' });
    else out.set(cluster, { outcome: c.failed > 0 ? 'FAILED' : 'SUCCEEDED', endedAt: ended });
  }
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

/** The engine's decision for a staged pass, and the waves' state changes to record first. */
export function decideStage(pass: StagedPass, targets: readonly RolloutTarget[]): { decision: StageDecision; waves: WaveUpdate[]; step: RunStep } {
  const clusters = clusterOutcomes(targets);
  const facts = runFacts(pass, clusters);
  const step = nextStep(facts);
  const active = new Set([...clusters].filter(([, p]) => p.outcome === 'ACTIVE').map(([c]) => c));
  return { decision: decisionOf(pass, step, active), waves: waveUpdates(pass, facts, step), step };
}

function decisionOf(pass: StagedPass, step: RunStep, active: Set<string>): StageDecision {
  switch (step.do) {
    case 'admit':
      return { do: 'admit in', clusters: new Set([...active, ...step.clusters]), wakeAt: null, waiting: null };
    case 'wait':
      return { do: 'admit in', clusters: active, wakeAt: step.until, waiting: step.reason };
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
