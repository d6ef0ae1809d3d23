/**
 * Why a rollout was started (`CauseInput`), the same for every mutation that starts one: the three bumps and
 * `rollbackRollout`. The sizes are enforced at the GraphQL edge by `src/graphql/inputLimits.ts` from this table, before
 * any resolver runs, and again by each kind's input schema, so that a caller other than GraphQL gets the same rules.
 */
import { z } from 'zod';
import { memberClusterSelectionInput } from '../clusterSelection.js';
import { waveStrategyInput } from '../waves/strategy.js';

/** Longest accepted value of each cause field, in characters. */
export const CAUSE_LIMITS = Object.freeze({ actor: 200, runUrl: 2000, commit: 200, message: 2000 });

/** Why a run URL is refused, or undefined. Shown as a link in the UI and the CLI: only web URLs, never `javascript:`. */
export function runUrlReason(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? undefined : `must be an http(s) URL (got a ${url.protocol} URL)`;
}

/** The message of a string longer than `max` (the same words as inputLimits.ts). */
export function tooLongReason(value: string, max: number): string | undefined {
  return value.length > max ? `must be at most ${max} characters (got ${value.length})` : undefined;
}

function text(max: number, format?: (value: string) => string | undefined) {
  return z
    .string()
    .superRefine((value, ctx) => {
      const reason = tooLongReason(value, max) ?? format?.(value);
      if (reason) ctx.addIssue({ code: 'custom', message: reason });
    })
    .nullish();
}

export const causeInput = z.object({
  actor: text(CAUSE_LIMITS.actor),
  runUrl: text(CAUSE_LIMITS.runUrl, runUrlReason),
  commit: text(CAUSE_LIMITS.commit),
  message: text(CAUSE_LIMITS.message),
});

/** The longest idempotency key (also in inputLimits.ts and the launcher). */
export const MAX_IDEMPOTENCY_KEY = 255;

/** Fields every rollout-starting input has. */
export const launchInputFields = {
  cause: causeInput.nullish(),
  idempotencyKey: z
    .string()
    .superRefine((value, ctx) => {
      if (value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY) ctx.addIssue({ code: 'custom', message: `must be 1 to ${MAX_IDEMPOTENCY_KEY} characters` });
    })
    .nullish(),
  dryRun: z.boolean().nullish(),
  /** Which member clusters the bump spans (ADR 0058); absent: `local`. */
  memberClusters: memberClusterSelectionInput,
  /** Ordered waves over those clusters (issue 30, ADR 0065); absent: not staged. */
  waveStrategy: waveStrategyInput,
};

/** `rollbackRollout(input:)`. */
export const rollbackInput = z.object({ cause: launchInputFields.cause, idempotencyKey: launchInputFields.idempotencyKey });
export type RollbackInput = z.output<typeof rollbackInput>;
