import { createHash } from 'node:crypto';
import type { CauseInput, MemberClusterSelectorInput, WaveStrategyInput } from './generated/graphql.js';
import { defaultIdempotencyKey, type CauseFields, type CiContext } from './ciContext.js';

/**
 * Command-line options → the schema's bump inputs, the part every kind shares (cause, idempotency key, dry run); each
 * rollout kind's builder is in its `src/kinds/<kind>/cli.ts` (ADR 0045). Only what the user gave is sent, so the
 * server's documented defaults apply to the rest. Each builder also returns the canonical target used in the default
 * idempotency key.
 */

export interface CauseOptions {
  actor?: string;
  runUrl?: string;
  commit?: string;
  message?: string;
  /** A key, or false for `--no-idempotency-key`. */
  idempotencyKey?: string | false;
  /** `--clusters a,b` (repeatable): member clusters by name. */
  clusters?: string[];
  /** `--cluster-selector tier=edge`: member clusters by label. */
  clusterSelector?: string;
  /** `--wave-strategy <file>`: the file's waves, as read (the server checks them). */
  waveStrategy?: WaveStrategyInput;
}

/** A mutation input (typed by the generated schema types) and what it targets. */
export interface BuiltInput<TInput> {
  input: TInput;
  /** Canonical description of what the request targets (part of the default idempotency key). */
  target: string;
}

/** The distinct values, sorted: a selection's canonical order (part of the default idempotency key). */
export const sorted = (values: readonly string[] | undefined) => [...new Set(values ?? [])].sort();

/** Environment cause, overridden field by field by the flags; undefined when empty. */
export function causeFrom(ci: CiContext, options: CauseOptions): CauseFields | undefined {
  const cause: CauseFields = { ...ci.cause };
  if (options.actor !== undefined) cause.actor = options.actor;
  if (options.runUrl !== undefined) cause.runUrl = options.runUrl;
  if (options.commit !== undefined) cause.commit = options.commit;
  if (options.message !== undefined) cause.message = options.message;
  return Object.keys(cause).length ? cause : undefined;
}

/**
 * The key to send: `--idempotency-key` as given; none with `--no-idempotency-key`; otherwise derived from the CI step
 * (none outside CI). Dry runs get no derived key: a preview must not claim the key of the real run that follows.
 */
export function idempotencyKeyFor(ci: CiContext, options: CauseOptions, operation: string, target: string, dryRun: boolean): string | undefined {
  if (options.idempotencyKey === false) return undefined;
  if (typeof options.idempotencyKey === 'string') return options.idempotencyKey;
  return dryRun ? undefined : defaultIdempotencyKey(ci, operation, target);
}

/** The fields every bump input has. */
interface CommonInput {
  cause?: CauseInput | null;
  idempotencyKey?: string | null;
  dryRun?: boolean | null;
  memberClusters?: MemberClusterSelectorInput | null;
  waveStrategy?: WaveStrategyInput | null;
}

/** `--clusters` and `--cluster-selector` → the bump's `memberClusters`; undefined when neither is given (`local`). */
export function memberClustersFrom(options: CauseOptions): MemberClusterSelectorInput | undefined {
  const names = sorted(options.clusters);
  const selection: MemberClusterSelectorInput = {};
  if (names.length) selection.names = names;
  if (options.clusterSelector !== undefined) selection.labelSelector = options.clusterSelector;
  return Object.keys(selection).length ? selection : undefined;
}

/** Adds what every bump input has (member clusters, cause, idempotency key, dry run) to a kind's input. */
export function withCommon<TInput extends CommonInput>(
  input: TInput,
  ci: CiContext,
  options: CauseOptions,
  operation: string,
  target: string,
  dryRun: boolean,
): BuiltInput<TInput> {
  const cause = causeFrom(ci, options);
  const memberClusters = memberClustersFrom(options);
  // The clusters are part of what is targeted: the same pools in edge-1 and in edge-2 are two bumps with two keys.
  const clustered = memberClusters
    ? `${target};memberClusters=${[...(memberClusters.names ?? []), ...(memberClusters.labelSelector !== undefined ? [`selector=${memberClusters.labelSelector}`] : [])].join(',')}`
    : target;
  // The waves too: the same bump staged differently is another request.
  const waveStrategy = options.waveStrategy;
  const targeted = waveStrategy ? `${clustered};waves=${createHash('sha256').update(JSON.stringify(waveStrategy)).digest('hex').slice(0, 16)}` : clustered;
  const key = idempotencyKeyFor(ci, options, operation, targeted, dryRun);
  return {
    input: {
      ...input,
      ...(memberClusters ? { memberClusters } : {}),
      ...(waveStrategy ? { waveStrategy } : {}),
      ...(cause ? { cause } : {}),
      ...(key ? { idempotencyKey: key } : {}),
      ...(dryRun ? { dryRun: true } : {}),
    },
    target: targeted,
  };
}
