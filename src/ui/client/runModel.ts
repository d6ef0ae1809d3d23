/**
 * What the run page (RolloutRun.tsx) reads out of a staged rollout: each cluster's outcome from its targets, and an
 * approval gate's rules with docs/waves.md's defaults. No React and no DOM: test/ui/runModel.test.ts checks the
 * outcome rule against the engine's.
 */
import { recordOf } from './json.js';

export type Role = 'viewer' | 'deployer' | 'admin';

export type ClusterOutcome = 'PENDING' | 'ACTIVE' | 'SUCCEEDED' | 'FAILED' | 'SKIPPED';

/**
 * Each cluster's outcome from its targets' recorded states, by the engine's rule (src/domain/waves/engineStage.ts):
 * SKIPPED when none of its targets changes, PENDING while none started, ACTIVE while any is pending or in flight, then
 * FAILED if any failed, else SUCCEEDED.
 */
export function clusterOutcomes(targets: readonly { cluster: string; state: string }[]): Map<string, ClusterOutcome> {
  const byCluster = new Map<string, string[]>();
  for (const t of targets) byCluster.set(t.cluster, [...(byCluster.get(t.cluster) ?? []), t.state]);
  const out = new Map<string, ClusterOutcome>();
  for (const [cluster, states] of byCluster) {
    const changing = states.filter((s) => s !== 'SKIPPED' && s !== 'CANCELLED');
    if (changing.length === 0) out.set(cluster, 'SKIPPED');
    else if (changing.every((s) => s === 'PENDING')) out.set(cluster, 'PENDING');
    else if (changing.some((s) => s === 'PENDING' || s === 'PROGRESSING')) out.set(cluster, 'ACTIVE');
    else out.set(cluster, changing.includes('FAILED') ? 'FAILED' : 'SUCCEEDED');
  }
  return out;
}

export const ROLE_RANK: Readonly<Record<Role, number>> = { viewer: 0, deployer: 1, admin: 2 };

/** An APPROVAL gate's configuration with docs/waves.md's defaults. */
export interface ApprovalConfig {
  required: number;
  role: Role;
  excludeStarter: boolean;
  deadline: string | null;
  onDeadline: string;
}

export function approvalConfigOf(config: unknown): ApprovalConfig {
  const c = recordOf(config);
  return {
    required: typeof c.required === 'number' ? c.required : 1,
    role: c.role === 'admin' ? 'admin' : 'deployer',
    excludeStarter: c.excludeStarter !== false,
    deadline: typeof c.deadline === 'string' ? c.deadline : null,
    onDeadline: c.onDeadline === 'WAIT' ? 'WAIT' : 'FAIL',
  };
}

export function describeApproval(c: ApprovalConfig): string {
  const who = `${c.required} approval${c.required === 1 ? '' : 's'} by distinct ${c.role} tokens${c.excludeStarter ? ', not the run’s starter' : ''}`;
  return c.deadline ? `${who}; deadline ${c.deadline}, then ${c.onDeadline}` : who;
}

export function secondsOf(config: unknown): string {
  const seconds = recordOf(config).seconds;
  return typeof seconds === 'number' ? String(seconds) : '?';
}

/**
 * Whether the caller (by its token's name) started the run and the gate excludes the run's starter: the server refuses
 * its decisions there (FORBIDDEN), so the page offers none. `startedBy` is the run's `Rollout.startedBy`.
 */
export function isExcludedStarter(gate: { type: string; config: unknown }, caller: string | undefined, startedBy: string | null | undefined): boolean {
  return gate.type === 'APPROVAL' && approvalConfigOf(gate.config).excludeStarter && !!caller && !!startedBy && caller === startedBy;
}

/**
 * Whether a caller of `role` is offered a decision at a gate: a waiting APPROVAL gate of a run still going, a role it
 * accepts, and not the run's starter where the gate excludes it (the server still decides).
 */
export function mayDecide(
  gate: { type: string; config: unknown; state: string | undefined },
  role: Role | undefined,
  runActive: boolean,
  excludedStarter = false,
): boolean {
  if (gate.type !== 'APPROVAL' || gate.state !== 'WAITING' || !runActive || role === undefined || excludedStarter) return false;
  return ROLE_RANK[role] >= ROLE_RANK[approvalConfigOf(gate.config).role];
}
