import type { ReactNode } from 'react';
import { describeError, isNotImplemented, isUnauthenticated } from './api.js';
import { shortVersion } from './format.js';
import type { PageInfo, Progress } from './types.js';

/** Rollout states that ended before every target converged: their bar shows what succeeded, never "100 %". */
const STOPPED = new Set(['FAILED', 'ABORTED', 'ROLLED_BACK']);

export function ProgressBar({ progress, label, state }: { progress: Progress; label: string; state?: string }) {
  const share = (n: number) => (progress.total ? (n / progress.total) * 100 : 0);
  const stopped = state !== undefined && STOPPED.has(state);
  // A stopped rollout "finished" all its targets (failed and cancelled ones too): its percent would read 100.
  const percent = stopped ? Math.round(share(progress.succeeded) * 10) / 10 : Math.round(progress.percent * 10) / 10;
  // Finished targets by outcome: converged, failed, and left alone (skipped or cancelled).
  const segments = [
    { className: 'succeeded', width: share(progress.succeeded) },
    { className: 'failed', width: share(progress.failed) },
    { className: 'unchanged', width: share(progress.skipped + progress.cancelled) },
  ];
  const counts = `${progress.succeeded}/${progress.total} succeeded`;
  return (
    <div className="progress">
      <div
        className="progress-track"
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        aria-valuetext={
          stopped
            ? `${state.toLowerCase().replace('_', ' ')}: ${counts}, ${progress.failed} failed, ${progress.skipped + progress.cancelled} unchanged`
            : `${percent}% finished: ${counts}, ${progress.failed} failed, ${progress.skipped + progress.cancelled} unchanged of ${progress.total}`
        }
      >
        {segments.map((s) => s.width > 0 && <div key={s.className} className={`progress-fill ${s.className}`} style={{ width: `${s.width}%` }} />)}
      </div>
      <span className="progress-text">
        {stopped ? `${state.toLowerCase().replace('_', ' ')} · ${counts}` : `${percent}% · ${counts}`}
        {progress.progressing > 0 && ` · ${progress.progressing} in progress`}
        {progress.failed > 0 && ` · ${progress.failed} failed`}
        {progress.skipped > 0 && ` · ${progress.skipped} skipped`}
        {progress.cancelled > 0 && ` · ${progress.cancelled} cancelled`}
      </span>
    </div>
  );
}

/**
 * A table (or anything wide) that scrolls sideways inside its panel instead of overflowing it. Keyboard users can
 * reach it (tabIndex) and screen readers announce it by its label, as a scrollable region needs to be.
 */
export function ScrollRegion({ label, className, children }: { label: string; className?: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to be scrolled with the keyboard (WCAG 2.1.1; axe scrollable-region-focusable).
    <section className={`table-scroll${className ? ` ${className}` : ''}`} aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}

/** The view's heading: one `<h1>` per page for screen-reader navigation; the panels below carry the visible titles. */
export function PageTitle({ children }: { children: ReactNode }) {
  return <h1 className="sr-only">{children}</h1>;
}

/** An object's settings as `name value` pairs, without the unset ones (instead of raw JSON). */
export function Settings({ value, empty = 'none' }: { value: Record<string, unknown> | null | undefined; empty?: string }) {
  const entries = Object.entries(value ?? {}).filter(([, v]) => v !== null && v !== undefined && v !== '');
  if (entries.length === 0) return <span className="muted">{empty}</span>;
  return (
    <span className="settings">
      {entries.map(([key, v]) => (
        <span key={key} className="setting">
          <span className="muted">{key}</span> <code>{typeof v === 'object' ? JSON.stringify(v) : String(v)}</code>
        </span>
      ))}
    </span>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge state-${state.toLowerCase()}`}>{state.replace('_', ' ')}</span>;
}

export function Version({ value }: { value: string | null | undefined }) {
  return (
    <code className="version" title={value ?? undefined}>
      {shortVersion(value)}
    </code>
  );
}

export function Pager(props: {
  page: number;
  pageInfo: PageInfo | undefined;
  onPrevious: () => void;
  onNext: () => void;
  total?: number | undefined;
  label: string;
}) {
  const { page, pageInfo } = props;
  return (
    <nav className="pager" aria-label={`${props.label} pages`}>
      <button type="button" onClick={props.onPrevious} disabled={page <= 1}>
        ← Previous
      </button>
      <span>
        Page {page}
        {props.total !== undefined && ` · ${props.total} total`}
      </span>
      <button type="button" onClick={() => pageInfo && props.onNext()} disabled={!pageInfo?.hasNextPage}>
        Next →
      </button>
    </nav>
  );
}

/**
 * A section's loading and error states. NOT_IMPLEMENTED is not an error to the user: that part of the API is in the
 * schema but this server does not back it yet.
 */
export function QueryStatus({
  error,
  loading,
  hasData,
  what,
  children,
}: {
  error: unknown;
  loading: boolean;
  hasData: boolean;
  what: string;
  children: ReactNode;
}) {
  if (isNotImplemented(error)) {
    return (
      <p className="not-available" role="status">
        Not available yet: this server does not back {what} yet.
      </p>
    );
  }
  if (isUnauthenticated(error)) {
    return (
      <p className="error" role="alert">
        This server requires an API token to show {what}: set one with “API token” at the top of the page.
      </p>
    );
  }
  return (
    <>
      {error !== undefined && (
        <p className="error" role="alert">
          Could not load {what}: {describeError(error)}
        </p>
      )}
      {!hasData && loading && <p className="muted">Loading {what}…</p>}
      {hasData && children}
    </>
  );
}

export function Section({ title, id, actions, children }: { title: string; id: string; actions?: ReactNode; children: ReactNode }) {
  return (
    <section className="panel" aria-labelledby={`${id}-title`}>
      <header className="panel-header">
        <h2 id={`${id}-title`}>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}
