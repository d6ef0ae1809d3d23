/**
 * The rollout kinds' contracts, together (ADR 0023): the strategy of any rollout, read from and written to the store
 * through the kind's schema, and the plan a kind's planner hands the launcher.
 */
import type { RolloutKind } from '../events.js';
import type { NewTarget } from '../RolloutService.js';
import { agentPoolStrategyStored, type AgentPoolStrategy } from './agentPool.js';
import { nodeAgentStrategyStored, type NodeAgentStrategy } from './nodeAgent.js';
import { virtualClusterStrategyStored, type VirtualClusterStrategy } from './virtualCluster.js';

/** Any rollout's strategy; `kind` tells which (it is the rollout's kind, not stored in the JSON). */
export type RolloutStrategy = AgentPoolStrategy | VirtualClusterStrategy | NodeAgentStrategy;
export type StrategyOf<K extends RolloutKind> = Extract<RolloutStrategy, { kind: K }>;

const STORED = {
  AGENT_POOL: agentPoolStrategyStored,
  VIRTUAL_CLUSTER: virtualClusterStrategyStored,
  NODE_AGENT: nodeAgentStrategyStored,
} as const;

/**
 * A stored strategy (the `Rollout.strategy` JSON column) → the kind's typed strategy. Rows written before a field
 * existed get its default; unreadable JSON reads as `{}` (all defaults) rather than stopping every query of the rollout.
 */
export function parseStoredStrategy<K extends RolloutKind>(kind: K, json: string): StrategyOf<K> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    value = {};
  }
  const object = typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
  return STORED[kind].parse(object) as StrategyOf<K>;
}

/** A kind's strategy with every default: what a stored `{}` reads as. */
export function defaultStrategy<K extends RolloutKind>(kind: K): StrategyOf<K> {
  return STORED[kind].parse({}) as StrategyOf<K>;
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
  toVersion: string;
  /** The selection as the user gave it (shown back on the rollout). */
  selector: Record<string, unknown>;
  /** Every default filled in (the kind's schema did it). */
  strategy: S;
  targets: NewTarget[];
}

export type { AgentPoolStrategy, NodeAgentStrategy, VirtualClusterStrategy };
