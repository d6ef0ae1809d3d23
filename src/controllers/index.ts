import type { Domain } from '../domain/Domain.js';
import type { RolloutDriver } from '../domain/ports.js';
import type { ControllerHost } from './host.js';

/** Domain query ports the rollout kinds provide (the optional fields of Domain that are not core). */
export type KindQueries = Partial<Omit<Domain, 'facts' | 'events' | 'rollouts' | 'launcher' | 'engine' | 'workQueues'>>;

/**
 * Sets up every rollout kind's informers and controllers on the host, and returns their drivers (for the engine) and
 * query ports (for the API). The one place that lists the kinds.
 */
export function setupRolloutKinds(_host: ControllerHost): { drivers: RolloutDriver[]; queries: KindQueries } {
  const drivers: RolloutDriver[] = [];
  const queries: KindQueries = {};
  return { drivers, queries };
}
