import type { DriftQuery } from './generated/graphql.js';
import type { ApiTokenView, BumpPayload, PlanItem, RolloutView, TargetView } from './operations.js';
import { targetLabel } from './targetTracker.js';
import { describeProgress } from './progressReporter.js';

/** Human-readable output of the client commands (json mode prints the documents instead). */

/** How every command spells a version the server does not know (none recorded, or targets on different ones). */
export const UNKNOWN_VERSION = '(unknown)';
const version = (value: string | null | undefined) => value ?? UNKNOWN_VERSION;

/** `45s`, `3m07s`, `2h05m`, `3d04h`: a duration for people, to the second below an hour. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

/** How long a rollout ran (from its start, else its creation, to its end); a running one counts to `now`, marked so. */
export function rolloutDuration(rollout: Pick<RolloutView, 'createdAt' | 'startedAt' | 'finishedAt'>, now = Date.now()): string {
  const from = Date.parse(rollout.startedAt ?? rollout.createdAt);
  if (rollout.finishedAt) return formatDuration(Date.parse(rollout.finishedAt) - from);
  return `${formatDuration(now - from)}…`;
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function formatRollout(rollout: RolloutView): string {
  const lines = [
    `rollout ${rollout.id}  ${rollout.kind}  ${rollout.state}`,
    `  version:  ${version(rollout.fromVersion)} → ${rollout.toVersion}`,
    `  progress: ${rollout.progress.percent.toFixed(0)}% (${describeProgress(rollout)})`,
  ];
  if (rollout.message) lines.push(`  message:  ${rollout.message}`);
  if (rollout.waitingFor) lines.push(`  waiting:  ${rollout.waitingFor}`);
  const failed = rollout.failedTargets;
  if (failed && failed.totalCount > 0) {
    lines.push(`  failed targets (${failed.totalCount}):`);
    for (const { node } of failed.edges) lines.push(`    ${targetLabel(node, node.cluster)}: ${node.error ?? 'failed'}`);
    if (failed.totalCount > failed.edges.length) lines.push(`    … and ${failed.totalCount - failed.edges.length} more`);
  }
  // In flight, yet waiting on a write of rollplane's that the member refused or never answered (attack 17, L2).
  const waiting = (rollout.inFlight?.edges ?? []).filter(({ node }) => node.error);
  if (waiting.length > 0) {
    lines.push(`  waiting targets (${waiting.length} of the first ${rollout.inFlight!.edges.length} in progress):`);
    for (const { node } of waiting) lines.push(`    ${targetLabel(node, node.cluster)}: ${node.error}`);
  }
  const cause = [rollout.cause.actor, rollout.cause.commit?.slice(0, 12), rollout.cause.runUrl].filter(Boolean).join('  ');
  if (cause) lines.push(`  cause:    ${cause}`);
  if (rollout.idempotencyKey) lines.push(`  key:      ${rollout.idempotencyKey}`);
  lines.push(`  created:  ${rollout.createdAt}${rollout.finishedAt ? `  finished: ${rollout.finishedAt}` : ''}  took: ${rolloutDuration(rollout)}`);
  return lines.join('\n');
}

/** Plan rows shown before the rest is summed up (`--plan` shows them all). */
export const PLAN_ROWS = 10;

/** `200 change, 12 skip (10 held, 2 already on the version)`: the plan's actions and the reasons for skipping. */
export function describePlan(plan: readonly PlanItem[]): string {
  const actions = new Map<string, number>();
  const reasons = new Map<string, number>();
  for (const item of plan) {
    actions.set(item.action, (actions.get(item.action) ?? 0) + 1);
    if (item.action !== 'change' && item.reason) reasons.set(item.reason, (reasons.get(item.reason) ?? 0) + 1);
  }
  const counts = [...actions].map(([action, n]) => `${n} ${action}`).join(', ');
  const why = [...reasons].map(([reason, n]) => `${n} ${reason}`).join(', ');
  return `${plan.length} target${plan.length === 1 ? '' : 's'}: ${counts}${why ? ` (${why})` : ''}`;
}

/** The plan as a table; beyond PLAN_ROWS rows (unless `full`), the first ones (changes first) and a summary line. */
export function formatPlan(plan: readonly PlanItem[], full = false): string {
  if (plan.length === 0) return 'plan: no targets matched';
  const shown =
    full || plan.length <= PLAN_ROWS ? plan : [...plan].sort((a, b) => Number(b.action === 'change') - Number(a.action === 'change')).slice(0, PLAN_ROWS);
  const rows = (items: readonly PlanItem[]) =>
    table(
      ['TARGET', 'ACTION', 'FROM', 'TO', 'REASON'],
      items.map((item) => [
        item.namespace ? `${item.namespace}/${item.name}` : item.name,
        item.action,
        version(item.fromVersion),
        item.toVersion,
        item.reason ?? '',
      ]),
    );
  const rest = plan.length - shown.length;
  const more = rest > 0 ? [`… and ${rest} more targets (--plan lists them all)`] : [];
  const clusters = [...new Set(plan.map(clusterOfItem))];
  // A plan in `local` alone reads as it always did; across member clusters, one table per cluster, in the plan's order.
  if (clusters.length === 1 && clusters[0] === LOCAL) return [`plan: ${describePlan(plan)}`, rows(shown), ...more].join('\n');
  const groups = clusters.map((cluster) => {
    const own = plan.filter((item) => clusterOfItem(item) === cluster);
    const visible = shown.filter((item) => clusterOfItem(item) === cluster);
    return [`cluster ${cluster}: ${describePlan(own)}`, ...(visible.length > 0 ? [rows(visible)] : [])].join('\n');
  });
  return [`plan: ${describePlan(plan)} in ${clusters.length} member cluster${clusters.length === 1 ? '' : 's'}`, ...groups, ...more].join('\n');
}

/** The member cluster rollplane runs against: a plan item names it (an older server's answer has no cluster). */
const LOCAL = 'local';
const clusterOfItem = (item: PlanItem) => item.cluster ?? LOCAL;

export function formatBump(payload: BumpPayload, fullPlan = false): string {
  const waves = payload.wavePlan ? ['', formatWavePlan(payload.wavePlan)] : [];
  if (payload.dryRun) {
    const r = payload.rollout;
    const changing = payload.plan.filter((p) => p.action === 'change').length;
    return [
      `dry run: nothing was changed; a ${r.kind} rollout would change ${changing} of ${payload.plan.length} targets`,
      `  version:  ${version(r.fromVersion)} → ${r.toVersion}`,
      ...waves,
      '',
      formatPlan(payload.plan, fullPlan),
    ].join('\n');
  }
  const head = payload.created
    ? `started rollout ${payload.rollout.id}`
    : `rollout ${payload.rollout.id} already exists for this idempotency key; not starting another`;
  return [head, formatRollout(payload.rollout), ...waves, '', formatPlan(payload.plan, fullPlan)].join('\n');
}

/** A staged bump's frozen waves: one line per wave with its clusters in order, then the clusters in no wave. */
export function formatWavePlan(plan: NonNullable<BumpPayload['wavePlan']>): string {
  const lines = plan.waves.map((w, i) => {
    const gates = [w.before ? `before: ${w.before.type}` : '', w.after ? `after: ${w.after.type}` : ''].filter(Boolean);
    const rules = [
      `${w.maxConcurrency} at once`,
      `tolerates ${w.maxFailures} failed`,
      ...(w.mandatory ? ['mandatory'] : []),
      ...(w.minSuccessSeconds > 0 ? [`soak ${formatDuration(w.minSuccessSeconds * 1000)}`] : []),
      ...gates,
    ];
    return `  ${i + 1}. ${w.name}: ${w.clusters.join(', ') || '(no cluster)'} (${rules.join('; ')})`;
  });
  const excluded = plan.excluded.length > 0 ? [`  excluded (in no wave): ${plan.excluded.join(', ')}`] : [];
  return [`waves (${plan.waves.length}; on a failed wave: ${plan.failurePolicy}):`, ...lines, ...excluded].join('\n');
}

/** A rollout's targets (`rollout targets`): one row each, in admission order, and how many matched. */
export function formatTargets(targets: readonly TargetView[], totalCount: number, scope: string): string {
  if (totalCount === 0) return `no targets${scope}`;
  const rows = targets.map((t) => [t.cluster, t.namespace ? `${t.namespace}/${t.name}` : t.name, t.state, t.toVersion, t.error ?? '']);
  const more = totalCount > targets.length ? [`… ${totalCount - targets.length} more (--limit)`] : [];
  return [`${totalCount} target${totalCount === 1 ? '' : 's'}${scope}`, table(['CLUSTER', 'TARGET', 'STATE', 'TO', 'ERROR'], rows), ...more].join('\n');
}

export function formatHistory(rollouts: readonly RolloutView[], totalCount: number, now = Date.now()): string {
  if (rollouts.length === 0) return 'no rollouts';
  const rows = rollouts.map((r) => [
    r.id,
    r.kind,
    r.state,
    `${r.progress.succeeded}/${r.progress.total}${r.progress.failed ? ` (${r.progress.failed} failed)` : ''}`,
    r.createdAt.replace(/\.\d{3}Z$/, 'Z'),
    rolloutDuration(r, now),
    r.cause.actor ?? '-',
    `${version(r.fromVersion)} → ${r.toVersion}`,
  ]);
  const more = totalCount > rollouts.length ? `\n(${rollouts.length} of ${totalCount}; use --limit for more)` : '';
  return table(['ID', 'KIND', 'STATE', 'DONE', 'CREATED', 'DURATION', 'ACTOR', 'VERSION'], rows) + more;
}

type DriftItem = DriftQuery['drift']['edges'][number]['node'];

export function formatDrift(items: readonly DriftItem[], totalCount: number): string {
  if (totalCount === 0) return 'no drift: every target runs its desired version';
  const rows = items.map((d) => [
    d.kind,
    d.namespace ? `${d.namespace}/${d.name}` : d.name,
    version(d.runningVersion),
    version(d.desiredVersion),
    d.since ?? '-',
  ]);
  const more = totalCount > items.length ? `\n(${items.length} of ${totalCount}; use --limit for more)` : '';
  return table(['KIND', 'TARGET', 'RUNNING', 'DESIRED', 'SINCE'], rows) + more;
}

export function formatTokens(tokens: readonly ApiTokenView[]): string {
  if (tokens.length === 0) return 'no tokens';
  return table(
    ['ID', 'NAME', 'ROLE', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED'],
    tokens.map((t) => [t.id, t.name, t.role, t.createdAt, t.expiresAt ?? 'never', t.lastUsedAt ?? '-', t.revokedAt ?? '-']),
  );
}
