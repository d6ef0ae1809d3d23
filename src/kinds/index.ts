import { eventDefinition, type UndefinedEventTypes } from '../domain/eventPayloads.js';
import { EventType, ROLLOUT_KINDS, type RolloutKind } from '../domain/events.js';
import type { KindContract, KindContracts } from '../domain/kinds/index.js';
import type { RolloutDriver } from '../domain/ports.js';
import { agentPoolKind } from './agentPool/module.js';
import type { ControllerHost } from '../controllers/host.js';
import type { KindResources } from '../clusters/kindDiscovery.js';
import type { AnyKindModule, KindQueries } from './kindModule.js';
import { nodeAgentKind } from './nodeAgent/module.js';
import { virtualClusterKind } from './virtualCluster/module.js';

export type { KindQueries } from './kindModule.js';

/** The registered rollout kinds: the one list outside the kinds' folders that names them (ADR 0041); the API's schema is built with them (buildSchema). */
export const ROLLOUT_KIND_MODULES: readonly AnyKindModule[] = [agentPoolKind, nodeAgentKind, virtualClusterKind];

/** The registered kinds' contracts, by kind: what the domain reads stored rollouts with (given to RolloutService). */
export const KIND_CONTRACTS: KindContracts = contractsOf(ROLLOUT_KIND_MODULES);
/** The resources each kind needs served, in the registered order: what discovery looks for on a member cluster. */
export const KIND_SERVED_RESOURCES: KindResources = ROLLOUT_KIND_MODULES.map((m) => ({ kind: m.kind, resources: m.contract.servedResources }));

/**
 * Every event type is defined (ADR 0051): the shared ones by the domain, each other one by the registered kind whose
 * `events.ts` its module lists. Checked when compiling (a kind's event type missing its definition is a type error
 * here) and when the list loads (each module's `events` are defined by then).
 */
const allEventTypesDefined: [UndefinedEventTypes] extends [never] ? true : { undefinedEventTypes: UndefinedEventTypes } = true;
const undefinedEventTypes = Object.values(EventType).filter((type) => !eventDefinition(type));
if (!allEventTypesDefined || undefinedEventTypes.length > 0) throw new Error(`no definition for the event type(s) ${undefinedEventTypes.join(', ')}`);
for (const module of ROLLOUT_KIND_MODULES) {
  for (const definition of module.events) {
    if (eventDefinition(definition.type) !== definition) throw new Error(`the event type ${definition.type} of ${module.kind} is defined elsewhere too`);
  }
}

function contractsOf(modules: readonly AnyKindModule[]): KindContracts {
  const byKind = new Map<RolloutKind, KindContract>(modules.map((m) => [m.kind, m.contract as KindContract]));
  const missing = ROLLOUT_KINDS.filter((kind) => !byKind.has(kind));
  if (missing.length > 0) throw new Error(`no registered module for the rollout kind(s) ${missing.join(', ')}`);
  return Object.fromEntries(byKind) as unknown as KindContracts;
}

/**
 * Sets up every registered kind's informers and controllers on the host, and returns their drivers (for the engine)
 * and query ports (for the API).
 */
export function setupRolloutKinds(
  host: ControllerHost,
  kinds: readonly AnyKindModule[] = ROLLOUT_KIND_MODULES,
): { drivers: RolloutDriver[]; queries: KindQueries } {
  const drivers: RolloutDriver[] = [];
  const queries: KindQueries = {};
  for (const kind of kinds) {
    const runtime = kind.setup(host);
    drivers.push(runtime.driver);
    Object.assign(queries, runtime.queries);
  }
  return { drivers, queries };
}
