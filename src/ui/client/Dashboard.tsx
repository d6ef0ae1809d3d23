import { useMemo, useState } from 'react';
import { PageTitle, ScrollRegion, Section } from './components.js';
import { formatTime } from './format.js';
import { useLive } from './hooks.js';
import { listed, useKinds } from './kindUi.js';
import type { FeedRow } from './liveStream.js';
import { FEED_LIMIT } from './LiveStore.js';
import { RolloutCard } from './RolloutCard.js';
import { ACTIVE_STATES } from './types.js';

export function Dashboard() {
  return (
    <div className="dashboard">
      <PageTitle>Rollouts and live feed</PageTitle>
      <RolloutsPanel />
      <FeedPanel />
    </div>
  );
}

function RolloutsPanel() {
  const live = useLive();
  const active = live.rollouts.filter((r) => ACTIVE_STATES.includes(r.state)).length;
  return (
    <Section id="rollouts" title={`Rollouts · ${active} active`} actions={<a href="#/history">All rollouts →</a>}>
      {live.rollouts.length === 0 ? (
        <p className="muted">No rollouts yet. Start one with a bump mutation (see the playground at /graphql).</p>
      ) : (
        <div className="rollout-list">
          {live.rollouts.map((rollout) => (
            <RolloutCard key={rollout.id} rollout={rollout} version={live.rolloutVersions.get(rollout.id) ?? 0} />
          ))}
        </div>
      )}
    </Section>
  );
}

const PAGE = 50;

function FeedPanel() {
  const live = useLive();
  const kinds = useKinds();
  const streams = kinds.flatMap((k) => k.live);
  const [stream, setStream] = useState('');
  const [search, setSearch] = useState('');
  const [shown, setShown] = useState(PAGE);
  const rows = useMemo(() => {
    const needle = search.trim().toLowerCase();
    return live.feed.filter((row) => (!stream || row.stream === stream) && (!needle || feedText(row).includes(needle)));
  }, [live.feed, stream, search]);

  return (
    <Section
      id="feed"
      title="Live feed"
      actions={
        <span className="muted small">
          {listed(streams.map((s) => s.label))}
          {live.replayedFrom !== null && ` since event ${live.replayedFrom}`}
        </span>
      }
    >
      <div className="filters">
        <label>
          Show{' '}
          <select value={stream} onChange={(e) => setStream(e.target.value)}>
            <option value="">everything</option>
            {streams.map((s) => (
              <option key={s.key} value={s.key}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Search{' '}
          <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder={`${kinds.map((k) => k.target).join(', ')}, image…`} />
        </label>
        <span className="muted small" aria-live="polite">
          {rows.length} rows{live.feed.length >= FEED_LIMIT && ` (newest ${FEED_LIMIT} kept)`}
        </span>
      </div>
      <ScrollRegion label="Live feed" className="feed-scroll">
        <table className="data feed" aria-label="Live feed">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Time</th>
              <th scope="col">What</th>
              <th scope="col">Target</th>
              <th scope="col">Detail</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {rows.slice(0, shown).map((row) => (
              <FeedRowView key={row.id} row={row} />
            ))}
            {rows.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  Nothing yet. Rows appear here as they happen: {listed(streams.map((s) => s.label))}.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </ScrollRegion>
      {rows.length > shown && (
        <button type="button" onClick={() => setShown((n) => n + PAGE)}>
          Show {Math.min(PAGE, rows.length - shown)} more
        </button>
      )}
    </Section>
  );
}

/** The row's id and time, then its stream's cells (LiveStream: what, target, detail, duration). */
function FeedRowView({ row }: { row: FeedRow }) {
  return (
    <tr data-event-id={row.id} data-feed-kind={row.stream}>
      <td>{row.id}</td>
      <td>{formatTime(row.at)}</td>
      {row.cells}
    </tr>
  );
}

function feedText(row: FeedRow): string {
  return Object.values(row.item)
    .filter((v) => typeof v === 'string')
    .join(' ')
    .toLowerCase();
}
