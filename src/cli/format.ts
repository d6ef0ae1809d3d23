import type { ApiTokenView, BumpPayload, PlanItem, RolloutView } from './operations.js';
import { describeProgress } from './progressReporter.js';

/** Human-readable output of the client commands (json mode prints the documents instead). */

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
    `  version:  ${rollout.fromVersion ?? '(mixed or unknown)'} → ${rollout.toVersion}`,
    `  progress: ${rollout.progress.percent.toFixed(0)}% (${describeProgress(rollout)})`,
  ];
  if (rollout.message) lines.push(`  message:  ${rollout.message}`);
  const failed = rollout.failedTargets;
  if (failed && failed.totalCount > 0) {
    lines.push(`  failed targets (${failed.totalCount}):`);
    for (const { node } of failed.edges) lines.push(`    ${node.namespace ? `${node.namespace}/` : ''}${node.name}: ${node.error ?? 'failed'}`);
    if (failed.totalCount > failed.edges.length) lines.push(`    … and ${failed.totalCount - failed.edges.length} more`);
  }
  const cause = [rollout.cause.actor, rollout.cause.commit?.slice(0, 12), rollout.cause.runUrl].filter(Boolean).join('  ');
  if (cause) lines.push(`  cause:    ${cause}`);
  if (rollout.idempotencyKey) lines.push(`  key:      ${rollout.idempotencyKey}`);
  lines.push(`  created:  ${rollout.createdAt}${rollout.finishedAt ? `  finished: ${rollout.finishedAt}` : ''}`);
  return lines.join('\n');
}

export function formatPlan(plan: readonly PlanItem[]): string {
  if (plan.length === 0) return 'plan: no targets matched';
  return table(
    ['TARGET', 'ACTION', 'FROM', 'TO', 'REASON'],
    plan.map((item) => [
      item.namespace ? `${item.namespace}/${item.name}` : item.name,
      item.action,
      item.fromVersion ?? '-',
      item.toVersion,
      item.reason ?? '',
    ]),
  );
}

export function formatBump(payload: BumpPayload): string {
  if (payload.dryRun) {
    const r = payload.rollout;
    const changing = payload.plan.filter((p) => p.action === 'change').length;
    return [
      `dry run: nothing was changed; a ${r.kind} rollout would change ${changing} of ${payload.plan.length} targets`,
      `  version:  ${r.fromVersion ?? '(mixed or unknown)'} → ${r.toVersion}`,
      '',
      formatPlan(payload.plan),
    ].join('\n');
  }
  const head = payload.created
    ? `started rollout ${payload.rollout.id}`
    : `rollout ${payload.rollout.id} already exists for this idempotency key; not starting another`;
  return [head, formatRollout(payload.rollout), '', formatPlan(payload.plan)].join('\n');
}

export function formatHistory(rollouts: readonly RolloutView[], totalCount: number): string {
  if (rollouts.length === 0) return 'no rollouts';
  const rows = rollouts.map((r) => [
    r.id,
    r.kind,
    r.state,
    `${r.progress.succeeded}/${r.progress.total}${r.progress.failed ? ` (${r.progress.failed} failed)` : ''}`,
    r.createdAt.replace(/\.\d{3}Z$/, 'Z'),
    r.cause.actor ?? '-',
    `${r.fromVersion ?? '?'} → ${r.toVersion}`,
  ]);
  const more = totalCount > rollouts.length ? `\n(${rollouts.length} of ${totalCount}; use --limit for more)` : '';
  return table(['ID', 'KIND', 'STATE', 'DONE', 'CREATED', 'ACTOR', 'VERSION'], rows) + more;
}

export function formatTokens(tokens: readonly ApiTokenView[]): string {
  if (tokens.length === 0) return 'no tokens';
  return table(
    ['ID', 'NAME', 'ROLE', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED'],
    tokens.map((t) => [t.id, t.name, t.role, t.createdAt, t.expiresAt ?? 'never', t.lastUsedAt ?? '-', t.revokedAt ?? '-']),
  );
}
