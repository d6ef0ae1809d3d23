/**
 * The rollout kinds' contracts, together (ADR 0023): the strategy of any rollout, read from and written to the store
 * through the kind's schema, and the plan a kind's planner hands the launcher.
 */
import { z } from 'zod';
import type { RolloutKind } from '../events.js';
import type { NewTarget } from '../RolloutService.js';
import { agentPoolSelectorStored, agentPoolStrategyStored, type AgentPoolStrategy } from './agentPool.js';
import { nodeAgentSelectorStored, nodeAgentStrategyStored, type NodeAgentStrategy } from './nodeAgent.js';
import { rollbackSelectorStored, type RollbackSelector } from './strategy.js';
import { virtualClusterSelectorStored, virtualClusterStrategyStored, type VirtualClusterStrategy } from './virtualCluster.js';

/** Any rollout's strategy; `kind` tells which (it is the rollout's kind, not stored in the JSON). */
export type RolloutStrategy = AgentPoolStrategy | VirtualClusterStrategy | NodeAgentStrategy;
export type StrategyOf<K extends RolloutKind> = Extract<RolloutStrategy, { kind: K }>;

interface Selectors {
  AGENT_POOL: z.output<typeof agentPoolSelectorStored>;
  NODE_AGENT: z.output<typeof nodeAgentSelectorStored>;
  VIRTUAL_CLUSTER: z.output<typeof virtualClusterSelectorStored>;
}
/** What a rollout of kind K selects, as stored with it: the kind's own selection, or (a rollback) the rollout it reverts. */
export type SelectorOf<K extends RolloutKind> = Selectors[K] | RollbackSelector;
export type RolloutSelector = SelectorOf<RolloutKind>;

/**
 * A kind's contract as the domain reads it: the schemas of its stored strategy and selector (JSON of any age → typed,
 * defaults in).
 */
export interface KindContract<K extends RolloutKind = RolloutKind> {
  readonly kind: K;
  readonly strategyStored: z.ZodType<StrategyOf<K>, unknown>;
  readonly selectorStored: z.ZodType<SelectorOf<K>, unknown>;
}

/** Every kind's contract, by kind (the registration objects in src/controllers/<kind>/module.ts carry the same ones). */
export const KIND_CONTRACTS: { readonly [K in RolloutKind]: KindContract<K> } = {
  AGENT_POOL: { kind: 'AGENT_POOL', strategyStored: agentPoolStrategyStored, selectorStored: z.union([rollbackSelectorStored, agentPoolSelectorStored]) },
  VIRTUAL_CLUSTER: {
    kind: 'VIRTUAL_CLUSTER',
    strategyStored: virtualClusterStrategyStored,
    selectorStored: z.union([rollbackSelectorStored, virtualClusterSelectorStored]),
  },
  NODE_AGENT: { kind: 'NODE_AGENT', strategyStored: nodeAgentStrategyStored, selectorStored: z.union([rollbackSelectorStored, nodeAgentSelectorStored]) },
};

/** A stored selector (the `Rollout.selector` JSON, parsed) → the kind's typed one; undefined when it is neither shape. */
export function parseStoredSelector<K extends RolloutKind>(kind: K, stored: unknown): SelectorOf<K> | undefined {
  const parsed = KIND_CONTRACTS[kind].selectorStored.safeParse(stored);
  return parsed.success ? (parsed.data as SelectorOf<K>) : undefined;
}

/** Whether a selector is a rollback's. */
export function isRollbackSelector(selector: RolloutSelector): selector is RollbackSelector {
  return 'rollbackOf' in selector;
}

/** Parsed stored strategies by kind and JSON text: a page of rollouts mostly repeats a few strategies. */
const parsedStrategies = new Map<string, Readonly<RolloutStrategy>>();
const PARSED_STRATEGIES_KEPT = 256;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * A stored strategy (the `Rollout.strategy` JSON column) → the kind's typed strategy. Rows written before a field
 * existed get its default; unreadable JSON reads as `{}` (all defaults) rather than stopping every query of the rollout.
 *
 * Every rollout read parses its strategy, and schema parsing was 6% of the server's CPU on a page of rollouts (issue 17
 * profiles), so equal texts share one parsed value. It is deeply frozen: a reader that changed it would change it for
 * every other rollout with the same text, so changing it throws instead.
 */
export function parseStoredStrategy<K extends RolloutKind>(kind: K, json: string): StrategyOf<K> {
  const key = `${kind}\u0000${json}`;
  const known = parsedStrategies.get(key);
  if (known) return known as StrategyOf<K>;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    value = {};
  }
  const object = typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
  const parsed = deepFreeze(KIND_CONTRACTS[kind].strategyStored.parse(object) as StrategyOf<K>);
  if (parsedStrategies.size >= PARSED_STRATEGIES_KEPT) parsedStrategies.clear();
  parsedStrategies.set(key, parsed);
  return parsed;
}

/** A kind's strategy with every default: what a stored `{}` reads as. */
export function defaultStrategy<K extends RolloutKind>(kind: K): StrategyOf<K> {
  return KIND_CONTRACTS[kind].strategyStored.parse({}) as StrategyOf<K>;
}

/** The JSON stored for a strategy: everything but `kind`, which the rollout row already has. */
export function serializeStrategy(strategy: RolloutStrategy): string {
  const { kind: _kind, ...stored } = strategy;
  return JSON.stringify(stored);
}

/** What a kind's planner computed for a bump: the targets in admission order and how to admit them. */
export interface RolloutPlan<S extends RolloutStrategy = RolloutStrategy> {
  kind: S['kind'];
  fromVersion: string | null;
  toVersion: string | null; // null: each target goes back to its own previous version (a rollback; Rollout.toVersion)
  /** The selection as the user gave it (shown back on the rollout), or the rollout a rollback reverts. */
  selector: SelectorOf<S['kind']>;
  /** Every default filled in (the kind's schema did it). */
  strategy: S;
  targets: NewTarget[];
}

export type { AgentPoolStrategy, NodeAgentStrategy, VirtualClusterStrategy };
