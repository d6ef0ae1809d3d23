import type { ReactNode } from 'react';
import { describeError, isNotImplemented, isUnauthenticated } from './api.js';
import { shortVersion } from './format.js';
import type { PageInfo, Progress } from './types.js';

export function ProgressBar({ progress, label }: { progress: Progress; label: string }) {
  const percent = Math.round(progress.percent * 10) / 10;
  const share = (n: number) => (progress.total ? (n / progress.total) * 100 : 0);
  // Finished targets by outcome: converged, failed, and left alone (skipped or cancelled).
  const segments = [
    { className: 'succeeded', width: share(progress.succeeded) },
    { className: 'failed', width: share(progress.failed) },
    { className: 'unchanged', width: share(progress.skipped + progress.cancelled) },
  ];
  return (
    <div className="progress">
      <div
        className="progress-track"
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        aria-valuetext={`${percent}% finished: ${progress.succeeded} succeeded, ${progress.failed} failed, ${progress.skipped + progress.cancelled} unchanged of ${progress.total}`}
      >
        {segments.map((s) => s.width > 0 && <div key={s.className} className={`progress-fill ${s.className}`} style={{ width: `${s.width}%` }} />)}
      </div>
      <span className="progress-text">
        {percent}% · {progress.succeeded}/{progress.total} succeeded
        {progress.progressing > 0 && ` · ${progress.progressing} in progress`}
        {progress.failed > 0 && ` · ${progress.failed} failed`}
        {progress.skipped > 0 && ` · ${progress.skipped} skipped`}
        {progress.cancelled > 0 && ` · ${progress.cancelled} cancelled`}
      </span>
    </div>
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
