/** Display helpers: times in the browser's locale, durations in s/min, versions shortened for tables. */

/** Today: the time only; otherwise a short date and time (the full ISO instant is in titles where it matters). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const time = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (date.toDateString() === new Date().toDateString()) return time;
  return `${date.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' })} ${time}`;
}

export function formatClock(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function formatSeconds(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  if (seconds < 10) return `${seconds.toFixed(2)} s`;
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

/** `registry.example/team/agent:v1.2.3@sha256:…` → `agent:v1.2.3`; the full value goes into a title attribute. */
export function shortVersion(version: string | null | undefined): string {
  if (!version) return '—';
  const withoutDigest = version.split('@')[0]!;
  const last = withoutDigest.split('/').pop() ?? withoutDigest;
  return last.length > 48 ? `${last.slice(0, 45)}…` : last;
}

export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export const kindLabel: Record<string, string> = {
  AGENT_POOL: 'Agent pools',
  VIRTUAL_CLUSTER: 'Virtual clusters',
  NODE_AGENT: 'Node agents',
};
