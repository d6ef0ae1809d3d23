import type { EventBus } from './EventBus.js';
import { EventType } from './events.js';
import type { RolloutEngine } from './RolloutEngine.js';

/**
 * How the engine hears of work: every committed RolloutStateChanged enqueues its rollout — a launch (PENDING), a
 * user's pause, resume or abort, the engine's own transitions. This is the only path by which rollouts reach the
 * engine's queue (the launcher does not enqueue what it creates), so a new rollout is enqueued once; and on PostgreSQL,
 * where the bus also carries what other replicas committed, a rollout launched through another replica reaches the
 * leader's engine by the same path. A decision at a staged rollout's gate (approveGate, rejectGate, on any replica)
 * wakes it the same way. Returns the unsubscribe function.
 */
/** A rollout's state changed, or a decision was kept at one of its gates (a staged run waiting for it goes on). */
const WAKING = new Set<string>([EventType.RolloutStateChanged, EventType.GateApproved, EventType.GateRejected]);

export function reactToRolloutEvents(bus: EventBus, engine: Pick<RolloutEngine, 'enqueue'>): () => void {
  return bus.subscribe((event) => {
    if (WAKING.has(event.type) && event.rolloutId) engine.enqueue(event.rolloutId);
  });
}
