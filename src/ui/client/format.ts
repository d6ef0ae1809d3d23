/** Display helpers: dates and times in the browser's locale, durations in s/min, versions shortened for tables. */

/** A date and time, always both (a time alone is ambiguous once a page is shared or left open overnight). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const sameYear = date.getFullYear() === new Date().getFullYear();
  const day = date.toLocaleDateString(undefined, { month: 'short', day: 'numeric', ...(sameYear ? {} : { year: 'numeric' }) });
  return `${day}, ${date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })}`;
}

/** How long from `from` to `to` (or to now, for something still running): `45 s`, `3 min 07 s`, `2 h 05 min`. */
export function formatDuration(from: string | null | undefined, to: string | null | undefined, now = Date.now()): string {
  if (!from) return '—';
  const ms = (to ? Date.parse(to) : now) - Date.parse(from);
  if (!Number.isFinite(ms)) return '—';
  const s = Math.max(0, Math.round(ms / 1000));
  const text =
    s < 60
      ? `${s} s`
      : s < 3600
        ? `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`
        : `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
  return to ? text : `${text} so far`;
}

export function formatSeconds(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  if (seconds < 10) return `${seconds.toFixed(2)} s`;
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

/** How the UI spells a version nobody recorded (or targets on different ones), everywhere: as the CLI does. */
export const UNKNOWN_VERSION = '(unknown)';

/** `registry.example/team/agent:v1.2.3@sha256:…` → `agent:v1.2.3`; the full value goes into a title attribute. */
export function shortVersion(version: string | null | undefined): string {
  if (!version) return UNKNOWN_VERSION;
  const withoutDigest = version.split('@')[0]!;
  const last = withoutDigest.split('/').pop() ?? withoutDigest;
  return last.length > 48 ? `${last.slice(0, 45)}…` : last;
}

export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}
