import { ValidationError } from '../../errors.js';
import type { Role } from '../../auth/roles.js';
import type { GateProgress } from '../waves/progress.js';
import { type ApprovalDecision, type ApprovalRuleInput, approvalStatus, parseApprovalRule } from './approval.js';

/**
 * The gate types a staged rollout may put before or after a wave (issue 30, ADR 0065, ADR 0068). A gate is a `type`
 * and a JSON `config`: the type's entry checks the config at launch (with its field path), may start work when the gate
 * opens (`open`: an analysis run, an external check's attempt), and computes the gate's progress from what was kept
 * about it (decisions, attempts, analysis runs in SQL) and the clock — never from memory and never from a network
 * call, so a new leader reads the same answer and a slow endpoint delays nobody's pass. APPROVAL and TIMED_WAIT are
 * built in (GATE_TYPES); the types that need rollplane's services (ANALYSIS, ALERT, EXTERNAL_CHECK) are entries the
 * composition root adds (src/start/gateTypes.ts).
 */

/** Which gate of which run: what a gate type's `open` and its progress may need to know beyond its config. */
export interface GateRef {
  /** The RolloutGate row's id. */
  id: string;
  rolloutId: string;
  /** `before:<wave>` or `after:<wave>`; `targets:<n>` for a gate between the targets of a rollout without waves. */
  key: string;
  /**
   * The wave the gate stands before or after: its name, position in the run and clusters (frozen). For a gate between
   * targets, its step: name `targets:<n>`, ordinal n, the clusters of the step's targets.
   */
  wave: { name: string; ordinal: number; clusters: readonly string[] };
  /** The rollout's target version, and the version it started from (null when several). */
  version: string;
  baselineVersion: string | null;
}

/** One answer kept at a gate that asks something outside (an external check's attempt, an alert gate's look). */
export interface GateAttempt {
  seq: number;
  startedAt: Date;
  at: Date;
  answer: 'PROCEED' | 'WAIT' | 'FAILURE';
  /** For WAIT: how long the answer asked to wait before the next attempt. */
  afterMs: number | null;
  reason: string;
}

export interface GateFacts {
  openedAt: Date;
  now: Date;
  /** Decisions kept at the gate, oldest first (approval gates). */
  decisions: readonly { deciderId: string; role: Role; verdict: 'APPROVE' | 'REJECT'; at: Date; comment: string | null }[];
  /** Attempts kept at the gate, oldest first (external checks, alert looks). */
  attempts: readonly GateAttempt[];
  gate: GateRef;
}

export interface GateType {
  /** Checks a config at launch; throws an AppError naming the field (BAD_USER_INPUT, or UNAVAILABLE). Returns the config as it is kept. */
  check(config: unknown, field: string): Record<string, unknown>;
  /**
   * Resolves what a config refers to (an ANALYSIS gate's `templateName`: the stored template's text) before `check`,
   * when a rollout is launched: the result is what is checked and kept, so a later change of what it referred to
   * changes no launched rollout (ADR 0071). Throws an AppError naming the field.
   */
  resolve?(config: unknown, field: string): Promise<unknown>;
  /** From kept facts and the clock only: no network call (a new leader computes the same). */
  progress(config: Record<string, unknown>, facts: GateFacts): GateProgress | Promise<GateProgress>;
  /**
   * Starts what the gate waits on, when it opens and again on each engine pass while it waits (so a new leader picks
   * up where the last left off): idempotent, and it only starts work — whatever asks a network runs in the background,
   * bounded by a timeout, and records its answer; the pass never waits on it.
   */
  open?(config: Record<string, unknown>, facts: GateFacts): Promise<void>;
  /**
   * Measures again (argo-rollouts#2897): a new attempt linked to the one it retries (retryGate). Only types that
   * have it can be retried; called for a gate that FAILED or holds the run.
   */
  retry?(config: Record<string, unknown>, facts: GateFacts): Promise<void>;
  /** Whether people decide on it (approve/reject). */
  readonly takesDecisions: boolean;
}

/** The gate types a rollplane knows, by name. */
export type GateTypes = Readonly<Record<string, GateType>>;

const MAX_WAIT_SECONDS = 31 * 24 * 3600;

function objectConfig(config: unknown, field: string): Record<string, unknown> {
  if (config == null) return {};
  if (typeof config !== 'object' || Array.isArray(config)) throw new ValidationError(field, 'must be a JSON object');
  return config as Record<string, unknown>;
}

function onlyKeys(config: Record<string, unknown>, keys: readonly string[], field: string): void {
  const unknown = Object.keys(config).find((k) => !keys.includes(k));
  if (unknown !== undefined) throw new ValidationError(`${field}.${unknown.slice(0, 40)}`, `is not a field of this gate (known: ${keys.join(', ')})`);
}

const APPROVAL_KEYS = ['required', 'role', 'excludeStarter', 'deadline', 'onDeadline'] as const;

export const APPROVAL: GateType = {
  takesDecisions: true,
  check(config, field) {
    const c = objectConfig(config, field);
    onlyKeys(c, APPROVAL_KEYS, field);
    parseApprovalRule(c as ApprovalRuleInput, field);
    return c;
  },
  progress(config, facts) {
    const rule = parseApprovalRule(config as ApprovalRuleInput, 'config');
    const decisions: ApprovalDecision[] = facts.decisions.map((d) => ({
      by: { id: d.deciderId, name: d.deciderId, role: d.role },
      verdict: d.verdict,
      at: d.at,
      comment: d.comment,
    }));
    const status = approvalStatus(rule, decisions, facts.openedAt, facts.now);
    if (status.state === 'APPROVED') return { state: 'PASSED', reason: status.reason };
    if (status.state === 'REJECTED' || status.state === 'EXPIRED') return { state: 'FAILED', reason: status.reason };
    // Under FAIL the deadline is the next time the answer changes without a decision.
    const until = status.deadline && rule.onDeadline === 'FAIL' ? status.deadline : null;
    return { state: 'WAITING', reason: status.reason, until };
  },
};

export const TIMED_WAIT: GateType = {
  takesDecisions: false,
  check(config, field) {
    const c = objectConfig(config, field);
    onlyKeys(c, ['seconds'], field);
    const seconds = c.seconds;
    if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS) {
      throw new ValidationError(`${field}.seconds`, `must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS} (31 days)`);
    }
    return c;
  },
  progress(config, facts) {
    const ends = new Date(facts.openedAt.getTime() + (config.seconds as number) * 1000);
    return facts.now >= ends
      ? { state: 'PASSED', reason: `waited ${config.seconds as number}s` }
      : { state: 'WAITING', reason: `timed wait until ${ends.toISOString()}`, until: ends };
  },
};

/** The built-in gate types (no service needed). */
export const GATE_TYPES: GateTypes = { APPROVAL, TIMED_WAIT };

export function gateTypeOf(type: string, field = 'type', types: GateTypes = GATE_TYPES): GateType {
  const found = Object.hasOwn(types, type) ? types[type] : undefined;
  if (!found) throw new ValidationError(field, `"${type.slice(0, 40)}" is not a gate type (known: ${Object.keys(types).join(', ')})`);
  return found;
}
