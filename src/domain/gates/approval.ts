import { type Role, ROLES, roleAllows } from '../../auth/roles.js';
import { ConflictError, ForbiddenError, ValidationError } from '../../errors.js';
import { parseDuration } from './maintenanceWindows.js';

/**
 * Approval gates (issue 30): a gate passes once `required` distinct approvers holding at least `role` approved it —
 * optionally never the person who started the run — and fails at the first rejection. Past its deadline it fails or
 * keeps waiting, as the rule says (FAIL is the default: a run nobody approves must end, not wait forever without
 * saying why). Every decision is kept as given; the state is computed from them, so a replica that restarts or takes
 * over reads the same answer (nothing lives in memory).
 */
export type DeadlinePolicy = 'FAIL' | 'WAIT';

export interface ApprovalRuleInput {
  /** Distinct approvers needed; default 1, at most 10. */
  required?: number | null;
  /** The least role an approver holds; default `deployer`. */
  role?: string | null;
  /** The person who started the run may not approve it; default true. */
  excludeStarter?: boolean | null;
  /** How long the gate waits once it opened (`24h`); no deadline when omitted. */
  deadline?: string | null;
  onDeadline?: DeadlinePolicy | null;
}

export interface ApprovalRule {
  readonly required: number;
  readonly role: Role;
  readonly excludeStarter: boolean;
  readonly deadlineMs: number | null;
  readonly onDeadline: DeadlinePolicy;
}

/** Who decides: a token (its id and role) or, with authentication off, the anonymous caller. */
export interface Decider {
  /** Stable identity: the token id, or `anonymous`. */
  id: string;
  name: string;
  role: Role;
}

export interface ApprovalDecision {
  by: Decider;
  verdict: 'APPROVE' | 'REJECT';
  at: Date;
  comment: string | null;
}

export type ApprovalState = 'WAITING' | 'APPROVED' | 'REJECTED' | 'EXPIRED';

export interface ApprovalStatus {
  state: ApprovalState;
  /** Distinct approvers counted so far, in the order they approved. */
  approvers: readonly string[];
  /** Approvals still needed (0 once approved). */
  missing: number;
  /** For people: what the gate waits for or why it ended. */
  reason: string;
  /** When the deadline falls (null without one). */
  deadline: Date | null;
}

const MAX_REQUIRED = 10;
const MAX_COMMENT = 1_000;

export function parseApprovalRule(input: ApprovalRuleInput, field: string): ApprovalRule {
  const required = input.required ?? 1;
  if (!Number.isInteger(required) || required < 1 || required > MAX_REQUIRED) {
    throw new ValidationError(`${field}.required`, `must be a whole number from 1 to ${MAX_REQUIRED}`);
  }
  const role = (input.role ?? 'deployer') as Role;
  if (!ROLES.includes(role) || role === 'viewer') throw new ValidationError(`${field}.role`, 'must be deployer or admin (a viewer cannot approve)');
  const onDeadline = input.onDeadline ?? 'FAIL';
  if (onDeadline !== 'FAIL' && onDeadline !== 'WAIT') throw new ValidationError(`${field}.onDeadline`, 'must be FAIL or WAIT');
  return {
    required,
    role,
    excludeStarter: input.excludeStarter ?? true,
    deadlineMs: input.deadline ? parseDuration(input.deadline, `${field}.deadline`) : null,
    onDeadline,
  };
}

/** The gate's state from its decisions (in the order they were recorded), as of `now`. */
export function approvalStatus(rule: ApprovalRule, decisions: readonly ApprovalDecision[], openedAt: Date, now: Date): ApprovalStatus {
  const deadline = rule.deadlineMs === null ? null : new Date(openedAt.getTime() + rule.deadlineMs);
  const approvers: string[] = [];
  for (const decision of decisions) {
    // Decisions after the deadline (under FAIL) never count: the gate had ended.
    if (deadline && rule.onDeadline === 'FAIL' && decision.at >= deadline) break;
    if (decision.verdict === 'REJECT') {
      return {
        state: 'REJECTED',
        approvers,
        missing: rule.required - approvers.length,
        reason: `rejected by ${decision.by.name}${decision.comment ? `: ${decision.comment}` : ''}`,
        deadline,
      };
    }
    if (!approvers.includes(decision.by.id)) approvers.push(decision.by.id);
    if (approvers.length >= rule.required)
      return { state: 'APPROVED', approvers, missing: 0, reason: `approved by ${approvers.length} of ${rule.required}`, deadline };
  }
  const missing = rule.required - approvers.length;
  if (deadline && now >= deadline && rule.onDeadline === 'FAIL') {
    return {
      state: 'EXPIRED',
      approvers,
      missing,
      reason: `not approved by its deadline ${deadline.toISOString()} (${approvers.length} of ${rule.required})`,
      deadline,
    };
  }
  const waitingFor = `${missing} more approval${missing === 1 ? '' : 's'} by a ${rule.role}${rule.excludeStarter ? ' other than who started the run' : ''}`;
  const overdue = deadline && now >= deadline ? ` (past its deadline ${deadline.toISOString()}; it waits, as its rule says)` : '';
  return { state: 'WAITING', approvers, missing, reason: `waiting for ${waitingFor}${overdue}`, deadline };
}

/**
 * Checks that `decider` may decide on the gate now and returns the decision to record; refuses with FORBIDDEN (a role
 * below the rule's, or the run's starter when excluded: both audited by the caller) or CONFLICT (the gate already
 * ended: approved, rejected, expired, or its run is no longer active). Approving twice is accepted and counts once.
 */
export function checkDecision(
  rule: ApprovalRule,
  status: ApprovalStatus,
  decision: { by: Decider; verdict: 'APPROVE' | 'REJECT'; comment?: string | null; at: Date },
  context: { startedBy: string | null; runActive: boolean },
): ApprovalDecision {
  if (!context.runActive) throw new ConflictError('the run is no longer active: its gates take no decisions');
  if (status.state !== 'WAITING') throw new ConflictError(`the gate is already ${status.state.toLowerCase()}: ${status.reason}`);
  if (!roleAllows(decision.by.role, rule.role))
    throw new ForbiddenError(`deciding on this gate needs the ${rule.role} role; ${decision.by.name} is a ${decision.by.role}`);
  if (rule.excludeStarter && context.startedBy !== null && decision.by.id === context.startedBy) {
    throw new ForbiddenError(`${decision.by.name} started the run and may not decide on its approval gate`);
  }
  const comment = decision.comment?.trim() || null;
  if (comment && comment.length > MAX_COMMENT) throw new ValidationError('input.comment', `at most ${MAX_COMMENT} characters`);
  return { by: decision.by, verdict: decision.verdict, at: decision.at, comment };
}
