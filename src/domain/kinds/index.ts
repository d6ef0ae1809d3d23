/**
 * What the domain knows of a rollout kind's contract (ADRs 0023, 0045): the shape every kind's contract has, the
 * strategy of any rollout read from and written to the store through its kind's schema, and the plan a kind's planner
 * hands the launcher. The kinds themselves live in src/kinds/<kind>; the domain gets their contracts at composition
 * (`KindContracts`) and their types by declaration merging (`KindShapes`), and names none of them.
 */
import type { z } from 'zod';
import type { RolloutKind } from '../events.js';
import type { NewTarget } from '../RolloutService.js';
import type { RollbackSelector } from './strategy.js';

/**
 * What each rollout kind's contract adds to the domain's types, keyed by its `RolloutKind`: `{ strategy, selector }`.
 * Empty here: each kind fills its entry in by declaration merging from its own folder (`src/kinds/<kind>/contract.ts`,
 * ADR 0045), so the domain types every kind's strategy and selection without importing, or naming, any kind.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by the kinds' contracts (declaration merging)
export interface KindShapes {}

type ShapeOf<K extends RolloutKind> = K extends keyof KindShapes ? KindShapes[K] : never;

/** A kind's strategy; `kind` tells which (it is the rollout's kind, not stored in the JSON). */
export type StrategyOf<K extends RolloutKind> = ShapeOf<K> extends { strategy: infer S } ? S : never;
/** Any rollout's strategy. */
export type RolloutStrategy = { [K in RolloutKind]: StrategyOf<K> }[RolloutKind];

/** What a rollout of kind K selects, as stored with it: the kind's own selection, or (a rollback) the rollout it reverts. */
export type SelectorOf<K extends RolloutKind> = (ShapeOf<K> extends { selector: infer S } ? S : never) | RollbackSelector;
export type RolloutSelector = SelectorOf<RolloutKind>;

/**
 * A kind's contract as the domain reads it: the schemas of its stored strategy and selector (JSON of any age → typed,
 * defaults in). Each kind's module carries its own; the composition root hands them to the domain (`KindContracts`).
 */
export interface KindContract<K extends RolloutKind = RolloutKind> {
  readonly kind: K;
  readonly strategyStored: z.ZodType<StrategyOf<K>, unknown>;
  readonly selectorStored: z.ZodType<SelectorOf<K>, unknown>;
  /**
   * Its bump input offers `supersede` (its mutation's input in schema.graphql): an overlap refusal advises it only then,
   * since advice to pass an argument the mutation does not have ends in a validation error (attack finding F9).
   */
  readonly offersSupersede?: boolean;
  /**
   * Where its bump input takes the analysis between targets (`TargetAnalysisInput`, ADR 0071), as refusals name it:
   * `input.strategy.analysis` when the input groups the strategy's fields, `input.analysis` when they are its own.
   */
  readonly analysisField: string;
  /**
   * The resources its controllers watch: a member cluster has this kind when discovery finds every one served
   * (src/clusters/kindDiscovery.ts). A Harvester cluster without the vm-dhcp-controller has no IPPools, so no agent pools.
   */
  readonly servedResources: readonly ServedResource[];
}

/** A resource by its apiVersion and kind, as discovery answers for it. */
export interface ServedResource {
  readonly apiVersion: string;
  readonly kind: string;
}

/** Every kind's contract, by kind: built from the registered kinds (src/kinds/index.ts) and given to RolloutService. */
export type KindContracts = { readonly [K in RolloutKind]: KindContract<K> };

/** A stored selector (the `Rollout.selector` JSON, parsed) → the kind's typed one; undefined when it is neither shape. */
export function parseStoredSelector<K extends RolloutKind>(contract: KindContract<K>, stored: unknown): SelectorOf<K> | undefined {
  const parsed = contract.selectorStored.safeParse(stored);
  return parsed.success ? (parsed.data as SelectorOf<K>) : undefined;
}

/** Whether a selector is a rollback's. */
export function isRollbackSelector(selector: RolloutSelector): selector is RollbackSelector {
  return 'rollbackOf' in selector;
}

/** Parsed stored strategies by kind and JSON text: a page of rollouts mostly repeats a few strategies. */
const parsedStrategies = new Map<string, unknown>();
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
export function parseStoredStrategy<K extends RolloutKind>(contract: KindContract<K>, json: string): StrategyOf<K> {
  const key = `${contract.kind}\u0000${json}`;
  const known = parsedStrategies.get(key);
  if (known) return known as StrategyOf<K>;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    value = {};
  }
  const object = typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
  const parsed = deepFreeze(contract.strategyStored.parse(object) as StrategyOf<K>);
  if (parsedStrategies.size >= PARSED_STRATEGIES_KEPT) parsedStrategies.clear();
  parsedStrategies.set(key, parsed);
  return parsed;
}

/** A kind's strategy with every default: what a stored `{}` reads as. */
export function defaultStrategy<K extends RolloutKind>(contract: KindContract<K>): StrategyOf<K> {
  return contract.strategyStored.parse({}) as StrategyOf<K>;
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
