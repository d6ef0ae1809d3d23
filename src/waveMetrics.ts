import { Gauge, Histogram, type Registry } from 'prom-client';
import type { EventBus } from './domain/EventBus.js';
import { readPayload } from './domain/eventPayloads.js';
import { EventType } from './domain/events.js';
import type { RolloutService } from './domain/RolloutService.js';
import { ACTIVE_ROLLOUT_STATES } from './domain/rolloutStates.js';
import { clusterOutcomes } from './domain/waves/engineStage.js';

/**
 * Staged rollouts' metrics (issue 30, docs/waves.md): how long waves take, how long gates hold a run, and how many
 * clusters of the active staged rollouts are in each state. Durations come from the committed WaveFinished and
 * GateEnded events (so every replica that hears them counts them, as rollplane_events_appended_total does); the
 * clusters are counted from the store at scrape time, right after a restart and for rollouts other replicas drive.
 */
export interface WaveMetrics {
  /** Sets rollplane_wave_clusters from the store (called before each scrape). */
  scrape(rollouts: RolloutService): Promise<void>;
}

/** Active staged rollouts read at most per scrape (far more than ever run at once). */
const ACTIVE_PAGE = 200;
const CLUSTER_STATES = ['PENDING', 'ACTIVE', 'SUCCEEDED', 'FAILED', 'SKIPPED'] as const;
const BUCKETS = [10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600];

export function startWaveMetrics(registry: Registry, bus: EventBus): WaveMetrics & { stop(): void } {
  const waveDuration = new Histogram({
    name: 'rollplane_wave_duration_seconds',
    help: 'How long a staged rollout wave took, from the run reaching it (its before gate included) to its end, by kind and outcome.',
    labelNames: ['kind', 'outcome'],
    buckets: BUCKETS,
    registers: [registry],
  });
  const gateWait = new Histogram({
    name: 'rollplane_gate_wait_seconds',
    help: 'How long a staged rollout gate held its run, from opening to passing or failing, by gate type and outcome.',
    labelNames: ['type', 'state'],
    buckets: BUCKETS,
    registers: [registry],
  });
  const clusters = new Gauge({
    name: 'rollplane_wave_clusters',
    help: 'Member clusters of the active staged rollouts, by state (PENDING, ACTIVE, SUCCEEDED, FAILED, SKIPPED).',
    labelNames: ['state'],
    registers: [registry],
  });
  const stop = bus.subscribe((event) => {
    if (event.type === EventType.WaveFinished) {
      const { outcome, durationSeconds } = readPayload(EventType.WaveFinished, event.payload);
      if (outcome && durationSeconds !== undefined) waveDuration.observe({ kind: event.kind ?? 'unknown', outcome }, durationSeconds);
    } else if (event.type === EventType.GateEnded) {
      const { type, state, waitedSeconds } = readPayload(EventType.GateEnded, event.payload);
      if (type && state && waitedSeconds !== undefined) gateWait.observe({ type, state }, waitedSeconds);
    }
  });
  return {
    stop,
    async scrape(rollouts) {
      const counts = new Map<string, number>(CLUSTER_STATES.map((s) => [s, 0]));
      const active = await rollouts.list({ states: ACTIVE_ROLLOUT_STATES }, ACTIVE_PAGE, undefined);
      for (const rollout of active.items) {
        if (!(await rollouts.runs.runOf(rollout.id))) continue;
        for (const progress of clusterOutcomes(await rollouts.allTargets(rollout.id)).values())
          counts.set(progress.outcome, (counts.get(progress.outcome) ?? 0) + 1);
      }
      for (const [state, n] of counts) clusters.set({ state }, n);
    },
  };
}
