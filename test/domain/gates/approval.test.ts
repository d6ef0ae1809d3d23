import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../../src/errors.js';
import { type ApprovalDecision, approvalStatus, checkDecision, type Decider, parseApprovalRule } from '../../../src/domain/gates/approval.js';

const opened = new Date('2026-12-05T10:00:00Z');
const later = (minutes: number) => new Date(opened.getTime() + minutes * 60_000);
const alice: Decider = { id: 't-alice', name: 'alice', role: 'deployer' };
const bob: Decider = { id: 't-bob', name: 'bob', role: 'admin' };
const carol: Decider = { id: 't-carol', name: 'carol', role: 'deployer' };
const viewer: Decider = { id: 't-vic', name: 'vic', role: 'viewer' };
const approve = (by: Decider, minutes: number): ApprovalDecision => ({ by, verdict: 'APPROVE', at: later(minutes), comment: null });

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as { code: string }).code;
  }
  return 'accepted';
}

describe('approval gates', () => {
  const twoDeployers = parseApprovalRule({ required: 2, deadline: '1h' }, 'gate');

  it('passes on the required number of distinct approvers; the same approver twice counts once', () => {
    expect(approvalStatus(twoDeployers, [approve(alice, 1), approve(alice, 2)], opened, later(3))).toMatchObject({
      state: 'WAITING',
      approvers: ['t-alice'],
      missing: 1,
    });
    expect(approvalStatus(twoDeployers, [approve(alice, 1), approve(alice, 2), approve(carol, 3)], opened, later(4))).toMatchObject({
      state: 'APPROVED',
      approvers: ['t-alice', 't-carol'],
      missing: 0,
    });
  });

  it('fails at the first rejection, naming who and why', () => {
    const status = approvalStatus(
      twoDeployers,
      [approve(alice, 1), { by: bob, verdict: 'REJECT', at: later(2), comment: 'error budget spent' }],
      opened,
      later(3),
    );
    expect(status).toMatchObject({ state: 'REJECTED', reason: 'rejected by bob: error budget spent' });
  });

  it('expires at its deadline under FAIL (late approvals do not count) and keeps waiting, saying so, under WAIT', () => {
    expect(approvalStatus(twoDeployers, [approve(alice, 1), approve(carol, 61)], opened, later(62))).toMatchObject({
      state: 'EXPIRED',
      approvers: ['t-alice'],
      missing: 1,
    });
    const patient = parseApprovalRule({ deadline: '1h', onDeadline: 'WAIT' }, 'gate');
    const waiting = approvalStatus(patient, [], opened, later(90));
    expect(waiting.state).toBe('WAITING');
    expect(waiting.reason).toContain('past its deadline 2026-12-05T11:00:00.000Z');
    expect(approvalStatus(patient, [approve(alice, 95)], opened, later(96)).state).toBe('APPROVED');
  });

  it('refuses a decider below the role (FORBIDDEN), the run’s starter when excluded (FORBIDDEN), and any decision once the gate or run ended (CONFLICT)', () => {
    const adminOnly = parseApprovalRule({ role: 'admin' }, 'gate');
    const waiting = approvalStatus(adminOnly, [], opened, later(1));
    const context = { startedBy: 't-bob', runActive: true };
    expect(codeOf(() => checkDecision(adminOnly, waiting, { by: alice, verdict: 'APPROVE', at: later(1) }, context))).toBe(ErrorCode.Forbidden);
    expect(codeOf(() => checkDecision(adminOnly, waiting, { by: viewer, verdict: 'REJECT', at: later(1) }, context))).toBe(ErrorCode.Forbidden);
    expect(codeOf(() => checkDecision(adminOnly, waiting, { by: bob, verdict: 'APPROVE', at: later(1) }, context))).toBe(ErrorCode.Forbidden);
    const selfAllowed = parseApprovalRule({ role: 'admin', excludeStarter: false }, 'gate');
    expect(checkDecision(selfAllowed, waiting, { by: bob, verdict: 'APPROVE', comment: '  ship it ', at: later(1) }, context)).toMatchObject({
      comment: 'ship it',
    });
    expect(codeOf(() => checkDecision(selfAllowed, waiting, { by: bob, verdict: 'APPROVE', at: later(1) }, { ...context, runActive: false }))).toBe(
      ErrorCode.Conflict,
    );
    const approved = approvalStatus(selfAllowed, [approve(bob, 1)], opened, later(2));
    expect(codeOf(() => checkDecision(selfAllowed, approved, { by: bob, verdict: 'REJECT', at: later(2) }, context))).toBe(ErrorCode.Conflict);
  });

  it.each([
    [{ required: 0 }, 'gate.required'],
    [{ required: 11 }, 'gate.required'],
    [{ role: 'viewer' }, 'gate.role'],
    [{ role: 'root' }, 'gate.role'],
    [{ deadline: 'tomorrow' }, 'gate.deadline'],
    [{ onDeadline: 'SHRUG' as never }, 'gate.onDeadline'],
  ])('refuses a bad rule with BAD_USER_INPUT naming the field (%#)', (input, field) => {
    try {
      parseApprovalRule(input, 'gate');
      throw new Error('accepted');
    } catch (error) {
      expect((error as { code: string; details: { field: string } }).details.field).toBe(field);
      expect((error as { code: string }).code).toBe(ErrorCode.BadUserInput);
    }
  });
});
