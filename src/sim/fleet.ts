/**
 * PLACEHOLDER written by the API/store engineer so src/sim/index.ts compiles; the behaviour engineer owns this file
 * and replaces it with the real fleets (`demo`, generated sizes). Contract used by startSimulator:
 * `applyFleet(store, fleet)` creates the fleet's objects through the store.
 */
import type { ObjectStore } from './types.js';

export type FleetSpec = string;

export async function applyFleet(_store: ObjectStore, _fleet: FleetSpec): Promise<void> {
  // intentionally empty until the real fleet generator lands
}
