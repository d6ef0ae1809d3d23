import { ValidationError } from '../../errors.js';
import type { Role } from '../../auth/roles.js';
import type { GateProgress } from '../waves/progress.js';
import { type ApprovalDecision, type ApprovalRuleInput, approvalStatus, parseApprovalRule } from './approval.js';

/**
 * The gate types a staged rollout may put before or after a wave (issue 30, ADR 0065). A gate is a `type` and a JSON
 * `config`: the type's entry here checks the config at launch (with its field path) and computes the gate's progress
 * from what was kept about it (decisions, the time it opened) and the clock. Nothing else names a type, so a new one
 * (ANALYSIS, ALERT) is one entry here.
 */
export interface GateFacts {
  openedAt: Date;
  now: Date;
  /** Decisions kept at the gate, oldest first (approval gates). */
  decisions: readonly { deciderId: string; role: Role; verdict: 'APPROVE' | 'REJECT'; at: Date; comment: string | null }[];
}

export interface GateType {
  /** Checks a config at launch; throws ValidationError naming the field. Returns the config as it is kept. */
  check(config: unknown, field: string): Record<string, unknown>;
  progress(config: Record<string, unknown>, facts: GateFacts): GateProgress;
  /** Whether people decide on it (approve/reject). */
  readonly takesDecisions: boolean;
}

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

export const GATE_TYPES: Readonly<Record<string, GateType>> = { APPROVAL, TIMED_WAIT };

export function gateTypeOf(type: string, field = 'type'): GateType {
  const found = Object.hasOwn(GATE_TYPES, type) ? GATE_TYPES[type] : undefined;
  if (!found) throw new ValidationError(field, `"${type.slice(0, 40)}" is not a gate type (known: ${Object.keys(GATE_TYPES).join(', ')})`);
  return found;
}
