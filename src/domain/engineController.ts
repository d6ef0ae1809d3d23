import type { Manager } from '../controller/Manager.js';
import { reactToRolloutEvents } from './engineReactions.js';
import type { EventBus } from './EventBus.js';
import type { RolloutEngine } from './RolloutEngine.js';
import type { RolloutLauncher } from './RolloutLauncher.js';

export interface EngineControllerDeps {
  engine: RolloutEngine;
  launcher: RolloutLauncher;
  manager: Manager;
  bus: EventBus;
  /** Rollouts reconciled at once (one rollout never by two workers). */
  workers: number;
  /** Where the rollout kinds report a change to one of their targets. */
  onTargetChanged(listener: RolloutEngine['targetChanged']): void;
  logger: { error(fields: object, message: string): void };
}

/**
 * The engine on the controller runtime: one key per rollout id, re-evaluated on every change of the rollout (its
 * events), of one of its targets (the kinds' informers) and on every resync (the rollouts with work left).
 */
export function runEngineOnManager({ engine, launcher, manager, bus, workers, onTargetChanged, logger }: EngineControllerDeps): void {
  const rollouts = manager.controller({
    name: 'rollouts',
    workers,
    reconciler: { reconcile: (request, signal) => engine.reconcile(request.name, signal) },
  });
  rollouts.watch({
    resync: (enqueue) => {
      engine.pendingWork().then(
        (ids) => ids.forEach(enqueue),
        (error: unknown) => logger.error({ err: error }, 'cannot list rollouts to resume'),
      );
    },
  });
  engine.connect((id, afterMs) => (afterMs ? rollouts.enqueueAfter(id, afterMs) : rollouts.enqueue(id)), launcher);
  onTargetChanged((kind, namespace, name) => engine.targetChanged(kind, namespace, name));
  // Views of rollouts cached while not leading may be stale: another leader may have moved them on.
  manager.onStartedLeading(() => engine.forgetViews());
  reactToRolloutEvents(bus, engine);
}
