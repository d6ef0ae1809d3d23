import { useState } from 'react';
import { PageTitle, Pager, ProgressBar, QueryStatus, ScrollRegion, Section, StateBadge, Version } from './components.js';
import { formatDuration, formatTime } from './format.js';
import { useCursorPages, useDebounced, useHashRoute, useLive, useQuery } from './hooks.js';
import { kindLabel, listed, useKinds } from './kindUi.js';
import { EVENTS, ROLLOUTS } from './queries.js';
import type { EventFilter, RolloutFilter } from './generated/graphql.js';
import { eventTypesOf, ROLLOUT_STATES, payloadOf, type HistoryEvent, type RolloutKind, type RolloutState } from './types.js';

const PAGE_SIZE = 25;

export function History() {
  const route = useHashRoute();
  const tab = route[1] === 'events' ? 'events' : 'rollouts';
  return (
    <div className="history">
      <PageTitle>History</PageTitle>
      <nav className="tabs" aria-label="History">
        <a href="#/history" aria-current={tab === 'rollouts' ? 'page' : undefined}>
          Rollouts
        </a>
        <a href="#/history/events" aria-current={tab === 'events' ? 'page' : undefined}>
          Events
        </a>
      </nav>
      {tab === 'rollouts' ? <RolloutHistory /> : <EventHistory />}
    </div>
  );
}

function RolloutHistory() {
  const kinds = useKinds();
  const [search, setSearch] = useState('');
  const [kind, setKind] = useState<RolloutKind | ''>('');
  const [state, setState] = useState<RolloutState | ''>('');
  const [target, setTarget] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const filterKey = useDebounced(
    JSON.stringify({
      search: search.trim() || null,
      kind: kind || null,
      states: state ? [state] : null,
      targetName: target.trim() || null,
      createdAfter: from ? new Date(from).toISOString() : null,
      createdBefore: to ? new Date(to).toISOString() : null,
    }),
    300,
  );
  const pages = useCursorPages(filterKey);
  const query = useQuery(
    ROLLOUTS,
    // The filter round-trips through its JSON key (what the debounce compares); the key was built as a RolloutFilter.
    { filter: JSON.parse(filterKey) as RolloutFilter, first: PAGE_SIZE, after: pages.after },
    { pollMs: 10_000 },
  );
  const rollouts = query.data?.rollouts;
  return (
    <Section id="rollout-history" title={`Rollouts${rollouts ? ` · ${rollouts.totalCount}` : ''}`}>
      {/* biome-ignore lint/a11y/useSemanticElements: <form role="search"> is the ARIA landmark every browser maps; the <search> element is too new to rely on. */}
      <form className="filters" role="search" aria-label="Filter rollouts" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="version, actor, commit, message" />
        </label>
        <KindFilter value={kind} onChange={setKind} />
        <label>
          State{' '}
          <select value={state} onChange={(e) => setState(e.target.value as RolloutState | '')}>
            <option value="">any</option>
            {ROLLOUT_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Target{' '}
          <input
            value={target}
            onChange={(e) => setTarget(e.target.value)}
            placeholder={listed(
              kinds.map((k) => k.target),
              'or',
            )}
          />
        </label>
        <label>
          Created from <input type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} />
        </label>
        <label>
          to <input type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} />
        </label>
      </form>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!rollouts} what="rollouts">
        <ScrollRegion label="Rollout history">
          <table className="data" aria-label="Rollout history">
            <thead>
              <tr>
                <th scope="col">Rollout</th>
                <th scope="col">Kind</th>
                <th scope="col">State</th>
                <th scope="col">Version</th>
                <th scope="col">Progress</th>
                <th scope="col">Who</th>
                <th scope="col">Created</th>
                <th scope="col">Finished</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              {rollouts?.edges.map(({ node: r }) => (
                <tr key={r.id} data-rollout-id={r.id}>
                  <td>
                    <a href={`#/rollouts/${encodeURIComponent(r.id)}`}>{r.id}</a>
                  </td>
                  <td>{kindLabel(kinds, r.kind)}</td>
                  <td>
                    <StateBadge state={r.state} />
                  </td>
                  <td>
                    <Version value={r.fromVersion} /> → <Version value={r.toVersion} />
                  </td>
                  <td className="progress-cell">
                    <ProgressBar progress={r.progress} state={r.state} label={`Progress of rollout ${r.id}`} />
                  </td>
                  <td>{r.cause.actor ?? '—'}</td>
                  <td>{formatTime(r.createdAt)}</td>
                  <td>{formatTime(r.finishedAt)}</td>
                  <td>{formatDuration(r.startedAt ?? r.createdAt, r.finishedAt)}</td>
                </tr>
              ))}
              {rollouts && rollouts.edges.length === 0 && (
                <tr>
                  <td colSpan={9} className="muted">
                    No rollouts match.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </ScrollRegion>
        <Pager
          label="Rollouts"
          page={pages.page}
          pageInfo={rollouts?.pageInfo}
          total={rollouts?.totalCount}
          onPrevious={pages.previous}
          onNext={() => rollouts && pages.next(rollouts.pageInfo)}
        />
      </QueryStatus>
    </Section>
  );
}

/**
 * Events are paged oldest first from a starting id (the API's order, where the cursor is the event id); "Latest"
 * starts near the newest event.
 */
function EventHistory() {
  const live = useLive();
  const kinds = useKinds();
  const [types, setTypes] = useState<string[]>([]);
  const [rolloutId, setRolloutId] = useState('');
  const [namespace, setNamespace] = useState('');
  const [name, setName] = useState('');
  const [kind, setKind] = useState<RolloutKind | ''>('');
  const [since, setSince] = useState('');
  const [start, setStart] = useState<string | null>(null);
  const filterKey = useDebounced(
    JSON.stringify({
      types: types.length ? types : null,
      kind: kind || null,
      rolloutId: rolloutId.trim() || null,
      namespace: namespace.trim() || null,
      name: name.trim() || null,
      since: since ? new Date(since).toISOString() : null,
    }),
    300,
  );
  const pages = useCursorPages(`${filterKey}:${start}`);
  const query = useQuery(EVENTS, {
    filter: JSON.parse(filterKey) as EventFilter,
    first: PAGE_SIZE,
    after: pages.after ?? start,
  });
  const events = query.data?.events;
  const latestStart = live.server ? String(Math.max(0, Number(live.server.lastEventId) - 200)) : null;
  return (
    <Section id="event-history" title="Events">
      {/* biome-ignore lint/a11y/useSemanticElements: as above, a form with the search landmark role. */}
      <form className="filters" role="search" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
        <fieldset className="checkboxes">
          <legend>Types</legend>
          {eventTypesOf(kinds).map((t) => (
            <label key={t}>
              <input
                type="checkbox"
                checked={types.includes(t)}
                onChange={(e) => setTypes((current) => (e.target.checked ? [...current, t] : current.filter((x) => x !== t)))}
              />{' '}
              {t}
            </label>
          ))}
        </fieldset>
        <KindFilter value={kind} onChange={setKind} />
        <label>
          Rollout <input value={rolloutId} onChange={(e) => setRolloutId(e.target.value)} placeholder="ro_…" />
        </label>
        <label>
          Namespace <input value={namespace} onChange={(e) => setNamespace(e.target.value)} />
        </label>
        <label>
          Name <input value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Since <input type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />
        </label>
        <div className="button-row">
          <button type="button" onClick={() => setStart(null)} aria-pressed={start === null}>
            From the oldest
          </button>
          <button type="button" onClick={() => setStart(latestStart)} disabled={!latestStart} aria-pressed={start !== null}>
            Latest
          </button>
        </div>
      </form>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!events} what="events">
        <EventTable events={events?.edges.map((e) => e.node) ?? []} label="Event history" />
        {events?.pageInfo.hasNextPage && events.edges.length < PAGE_SIZE && (
          // A filter that no index serves: the page stopped after looking at 50,000 events (schema: Query.events).
          <p className="muted" role="status">
            Looked at the events up to id {events.pageInfo.endCursor}; Next → looks further.
          </p>
        )}
        <Pager label="Events" page={pages.page} pageInfo={events?.pageInfo} onPrevious={pages.previous} onNext={() => events && pages.next(events.pageInfo)} />
      </QueryStatus>
    </Section>
  );
}

export function EventTable({ events, label }: { events: HistoryEvent[]; label: string }) {
  return (
    <ScrollRegion label={label}>
      <table className="data events" aria-label={label}>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Time</th>
            <th scope="col">Type</th>
            <th scope="col">Object</th>
            <th scope="col">Rollout</th>
            <th scope="col">Detail</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr key={e.id} data-event-id={e.id}>
              <td>{e.id}</td>
              <td>{formatTime(e.createdAt)}</td>
              <td>{e.type}</td>
              <td>{e.object ? (e.object.namespace ? `${e.object.namespace}/${e.object.name}` : e.object.name) : '—'}</td>
              <td>{e.rolloutId ? <a href={`#/rollouts/${encodeURIComponent(e.rolloutId)}`}>{e.rolloutId}</a> : '—'}</td>
              <td className="payload">
                <code>{summarize(payloadOf(e))}</code>
              </td>
            </tr>
          ))}
          {events.length === 0 && (
            <tr>
              <td colSpan={6} className="muted">
                No events.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </ScrollRegion>
  );
}

/** The rollout-kind filter both history tables offer. */
function KindFilter({ value, onChange }: { value: RolloutKind | ''; onChange: (kind: RolloutKind | '') => void }) {
  const kinds = useKinds();
  return (
    <label>
      Kind{' '}
      <select value={value} onChange={(e) => onChange(e.target.value as RolloutKind | '')}>
        <option value="">all</option>
        {kinds.map((k) => (
          <option key={k.kind} value={k.kind}>
            {k.label}
          </option>
        ))}
      </select>
    </label>
  );
}

function summarize(payload: Record<string, unknown>): string {
  const text = Object.entries(payload)
    .filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' ');
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}
