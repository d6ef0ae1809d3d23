import { clusterOf } from '../ports.js';
import type { Rollout } from '../RolloutService.js';
import type { RolloutView } from '../RolloutView.js';
import type { StagedRuns } from '../waves/StagedRuns.js';
import { stepDue, stepTargets, type TargetGateStep, targetGateKey, targetGateStep } from './targetGates.js';

/**
 * A gate between the targets of a rollout without waves (`strategy.gate`: APPROVAL, TIMED_WAIT, EXTERNAL_CHECK or
 * ALERT; issue 30, ADR 0071 addendum), at the steps an analysis would stand at (`targets:<n>`, the same rule). It is
 * a staged run's gate in every other way: a RolloutGate row opened once with its GateWaiting event, its decisions and
 * attempts kept beside it, its progress computed by its type from those rows and the clock (StagedRuns) — so a new
 * leader decides the same, and approveGate / rejectGate find it by its key as they find a wave's.
 */

/** How soon a pass looks again at a gate that gave no time (woken at once by a decision or a check's answer). */
const RELOOK_MS = 30_000;

/** What the engine's pass does about the rollout's gate between targets (as TargetGates.step does for an analysis). */
export async function stepGate(runs: StagedRuns, rollout: Rollout, view: RolloutView, now: Date): Promise<TargetGateStep> {
  const spec = rollout.strategy.gate;
  let passed = rollout.engineState.analysisPassed ?? 0;
  if (!spec) return { do: 'admit', cap: Infinity, passed };
  let gates = await runs.gates(rollout.id, now, { rollout });
  // Gates whose rule now says PASSED or FAILED are recorded so (GateEnded), as a staged pass records its gates.
  await runs.recordGates(rollout.id, rollout.kind, gates, now);
  for (;;) {
    const due = stepDue(spec, view, passed);
    if ('admit' in due) return { do: 'admit', cap: due.admit, passed };
    const { step } = due;
    const key = targetGateKey(step);
    const place = { rollout, stepClusters: [...new Set(stepTargets(view, passed, step).map(clusterOf))] };
    const gate = gates.find((g) => g.row.key === key);
    if (!gate) {
      // Opened once across leaders (the row's insert decides), then read back as any gate: a 0 s wait passes at once.
      await runs.openGate(rollout, place, key, { type: spec.type, config: spec.config }, now);
      gates = await runs.gates(rollout.id, now, place);
      if (!gates.some((g) => g.row.key === key)) return { do: 'wait', until: new Date(now.getTime() + RELOOK_MS), passed };
      continue;
    }
    const { progress } = gate;
    if (progress.state === 'PASSED') {
      passed = step;
      continue;
    }
    if (progress.state === 'FAILED') return { do: 'fail', message: `gate ${key}: ${progress.reason}`, passed };
    if (progress.holds) return { do: 'hold', key, message: `gate ${key}: ${progress.reason}`, passed };
    // Waiting: what its type waits on is (re)started in the background (a check's next attempt, an alert's look).
    await runs.startWaiting([gate], place, now);
    const relook = now.getTime() + RELOOK_MS;
    return { do: 'wait', until: new Date(Math.min(progress.until?.getTime() ?? relook, relook)), passed };
  }
}

/**
 * What the rollout waits on between its targets (`Rollout.waitingFor`): its gate that waits, and why, e.g.
 * `gate targets:2: 0 of 1 approvals`; undefined when none waits. From the same rows the engine reads.
 */
export async function stepGateWaiting(runs: StagedRuns, rollout: Rollout, now: Date): Promise<string | undefined> {
  if (!rollout.strategy.gate) return undefined;
  const waiting = (await runs.gates(rollout.id, now, { rollout })).find(
    (g) => targetGateStep(g.row.key) !== undefined && g.progress.state === 'WAITING' && !g.progress.holds,
  );
  return waiting ? `gate ${waiting.row.key}: ${waiting.progress.reason}` : undefined;
}
