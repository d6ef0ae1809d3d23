import { useMemo, useState } from 'react';
import { PageTitle, ScrollRegion, Section, StateBadge, Version } from './components.js';
import { formatSeconds, formatTime, UNKNOWN_VERSION } from './format.js';
import { useLive } from './hooks.js';
import { FEED_LIMIT } from './LiveStore.js';
import { RolloutCard } from './RolloutCard.js';
import { ACTIVE_STATES, type FeedRow } from './types.js';

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
  const [kind, setKind] = useState<'' | FeedRow['kind']>('');
  const [search, setSearch] = useState('');
  const [shown, setShown] = useState(PAGE);
  const rows = useMemo(() => {
    const needle = search.trim().toLowerCase();
    return live.feed.filter((row) => (!kind || row.kind === kind) && (!needle || feedText(row).includes(needle)));
  }, [live.feed, kind, search]);

  return (
    <Section
      id="feed"
      title="Live feed"
      actions={
        <span className="muted small">
          agent recreations, node-agent replacements and cluster upgrades{live.replayedFrom !== null && ` since event ${live.replayedFrom}`}
        </span>
      }
    >
      <div className="filters">
        <label>
          Show{' '}
          <select value={kind} onChange={(e) => setKind(e.target.value as '' | FeedRow['kind'])}>
            <option value="">everything</option>
            <option value="agent">agent recreations</option>
            <option value="node">node-agent replacements</option>
            <option value="cluster">cluster upgrades</option>
          </select>
        </label>
        <label>
          Search <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="pool, cluster, image…" />
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
                  Nothing yet. Rows appear here as agents are recreated and clusters upgraded.
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

function FeedRowView({ row }: { row: FeedRow }) {
  if (row.kind === 'agent') {
    const r = row.item;
    return (
      <tr data-event-id={row.id} data-feed-kind="agent">
        <td>{row.id}</td>
        <td>{formatTime(row.at)}</td>
        <td>Agent recreated</td>
        <td>
          {r.poolNamespace}/{r.poolName}
        </td>
        <td title={`${r.oldImage ?? UNKNOWN_VERSION} → ${r.newImage}`}>
          → <Version value={r.newImage} /> <span className="muted">({r.reason})</span>
        </td>
        <td>{formatSeconds(r.seconds)}</td>
      </tr>
    );
  }
  if (row.kind === 'node') {
    const n = row.item;
    return (
      <tr data-event-id={row.id} data-feed-kind="node">
        <td>{row.id}</td>
        <td>{formatTime(row.at)}</td>
        <td>Node agent replaced</td>
        <td>node {n.node}</td>
        <td title={`${n.daemonSet ?? ''} ${n.oldImage ?? UNKNOWN_VERSION} → ${n.newImage ?? UNKNOWN_VERSION}`}>
          → <Version value={n.newImage} />
          {n.peerPodsRestarted !== null && <span className="muted"> ({n.peerPodsRestarted} peer pods back)</span>}
        </td>
        <td>{formatSeconds(n.seconds)}</td>
      </tr>
    );
  }
  const o = row.item;
  return (
    <tr data-event-id={row.id} data-feed-kind="cluster">
      <td>{row.id}</td>
      <td>{formatTime(row.at)}</td>
      <td>Cluster upgraded</td>
      <td>
        {o.clusterNamespace}/{o.clusterName}
      </td>
      <td>
        {o.clusterVersion} @ {o.resourceVersion} <StateBadge state={o.outcome} />
        {o.error && <span className="error small"> {o.error}</span>}
      </td>
      <td>{formatSeconds(o.seconds)}</td>
    </tr>
  );
}

function feedText(row: FeedRow): string {
  const item = row.item as unknown as Record<string, unknown>;
  return Object.values(item)
    .filter((v) => typeof v === 'string')
    .join(' ')
    .toLowerCase();
}
