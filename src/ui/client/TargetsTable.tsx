import { useEffect, useState } from 'react';
import { Pager, QueryStatus, ScrollRegion, StateBadge, Version } from './components.js';
import { formatSeconds, formatTime } from './format.js';
import { useCursorPages, useQuery, useThrottled } from './hooks.js';
import { ROLLOUT_TARGETS } from './queries.js';
import { TARGET_STATES, type TargetState } from './types.js';

const PAGE_SIZE = 25;

/**
 * A rollout's targets, a page at a time (a rollout may cover 1,000 pools). `version` changes whenever the rollout was
 * updated live; the page is then refetched, at most twice a second. `compact` (inside a dashboard card) leaves out the
 * previous version and the attempts.
 */
export function TargetsTable({ rolloutId, version, compact = false }: { rolloutId: string; version: number; compact?: boolean }) {
  const [state, setState] = useState<TargetState | ''>('');
  const pages = useCursorPages(`${rolloutId}:${state}`);
  const query = useQuery(ROLLOUT_TARGETS, { id: rolloutId, state: state || null, first: PAGE_SIZE, after: pages.after });
  const throttledVersion = useThrottled(version, 500);
  const { reload } = query;
  useEffect(() => {
    if (throttledVersion > 0) reload();
  }, [throttledVersion, reload]);

  const targets = query.data?.rollout?.targets;
  return (
    <div className="targets">
      <div className="filters">
        <label>
          Target state{' '}
          <select value={state} onChange={(e) => setState(e.target.value as TargetState | '')}>
            <option value="">any</option>
            {TARGET_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!targets} what="targets">
        <ScrollRegion label={`Targets of rollout ${rolloutId}`}>
          <table className="data">
            <caption className="sr-only">Targets of rollout {rolloutId}</caption>
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Target</th>
                <th scope="col">State</th>
                {!compact && <th scope="col">From</th>}
                <th scope="col">To</th>
                {!compact && <th scope="col">Attempts</th>}
                <th scope="col">Admitted</th>
                <th scope="col">Duration</th>
                <th scope="col">Note</th>
              </tr>
            </thead>
            <tbody>
              {targets?.edges.map(({ node: t }) => (
                <tr key={t.id} data-target={`${t.namespace}/${t.name}`}>
                  <td>{t.ordinal}</td>
                  <td>{t.namespace ? `${t.namespace}/${t.name}` : t.name}</td>
                  <td>
                    <StateBadge state={t.state} />
                  </td>
                  {!compact && (
                    <td>
                      <Version value={t.fromVersion} />
                    </td>
                  )}
                  <td>
                    <Version value={t.toVersion} />
                  </td>
                  {!compact && <td>{t.attempts}</td>}
                  <td>{formatTime(t.admittedAt)}</td>
                  <td>{formatSeconds(t.durationSeconds)}</td>
                  <td className="note">{t.error ?? t.skipReason ?? ''}</td>
                </tr>
              ))}
              {targets && targets.edges.length === 0 && (
                <tr>
                  <td colSpan={compact ? 7 : 9} className="muted">
                    No targets{state ? ` in state ${state}` : ''}.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </ScrollRegion>
        <Pager
          label="Targets"
          page={pages.page}
          pageInfo={targets?.pageInfo}
          total={targets?.totalCount}
          onPrevious={pages.previous}
          onNext={() => targets && pages.next(targets.pageInfo)}
        />
      </QueryStatus>
    </div>
  );
}
