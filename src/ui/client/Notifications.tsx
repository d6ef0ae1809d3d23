import { useState } from 'react';
import { describeError, GraphQLRequestError, gql } from './api.js';
import { PageTitle, Pager, QueryStatus, ScrollRegion, Section, StateBadge } from './components.js';
import { formatTime } from './format.js';
import {
  CreateSubscriptionDocument,
  DeleteSubscriptionDocument,
  type NotifiableState,
  NotificationOverviewDocument,
  type NotificationOverviewQuery,
  ReplayDeliveryDocument,
} from './generated/graphql.js';
import { useCursorPages, useQuery } from './hooks.js';

/**
 * Notifications (admin): each subscription's queue and last dispatch or error, and the deliveries that failed — dead
 * letters, and pending ones already tried — with a replay button. What users of every anchor asked for: a place that
 * says a notification did not go out, and why (fluxcd/notification-controller#1371).
 */

const PAGE_SIZE = 25;
type Subscription = NotificationOverviewQuery['notificationSubscriptions']['edges'][number]['node'];
type Delivery = NotificationOverviewQuery['notificationDeliveries']['edges'][number]['node'];

function filterSummary(s: Subscription): string {
  const parts = [
    s.filter.types.length ? s.filter.types.join(', ') : '',
    s.filter.kinds.length ? s.filter.kinds.join(', ') : '',
    s.filter.states.length ? `→ ${s.filter.states.join(', ')}` : '',
    s.filter.clusters.length ? `clusters ${s.filter.clusters.join(', ')}` : '',
    s.filter.rolloutIds.length ? `rollouts ${s.filter.rolloutIds.join(', ')}` : '',
    s.oncePer.length ? `once per ${s.oncePer.join(' + ').toLowerCase()}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join(' · ') : 'every event';
}

function lastOutcome(row: { lastError: string | null; lastStatusCode: number | null }): string {
  if (row.lastError) return row.lastError;
  return row.lastStatusCode !== null ? `HTTP ${row.lastStatusCode}` : '—';
}

export function Notifications() {
  const pages = useCursorPages('failures');
  const query = useQuery(
    NotificationOverviewDocument,
    { failures: { states: ['DEAD_LETTER', 'PENDING'] }, first: PAGE_SIZE, after: pages.after },
    { pollMs: 5_000 },
  );
  const forbidden = query.error instanceof GraphQLRequestError && query.error.code === 'FORBIDDEN';
  const subscriptions = query.data?.notificationSubscriptions.edges.map((e) => e.node);
  // Pending deliveries not tried yet are the normal queue, not failures.
  const failures = query.data?.notificationDeliveries.edges.map((e) => e.node).filter((d) => d.state === 'DEAD_LETTER' || d.attempts > 0);
  if (forbidden) {
    return (
      <>
        <PageTitle>Notifications</PageTitle>
        <p className="error" role="alert">
          Notifications are for admins: sign in with an admin token.
        </p>
      </>
    );
  }
  return (
    <div className="notifications">
      <PageTitle>Notifications</PageTitle>
      <Section id="notification-new" title="New subscription">
        <NewSubscription onCreated={query.reload} />
      </Section>
      <Section id="notification-subscriptions" title={`Notification subscriptions${subscriptions ? ` · ${subscriptions.length}` : ''}`}>
        <QueryStatus error={query.error} loading={query.loading} hasData={!!subscriptions} what="notification subscriptions">
          <ScrollRegion label="Notification subscriptions">
            <table className="data" aria-label="Notification subscriptions">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Sink</th>
                  <th scope="col">Events</th>
                  <th scope="col">Pending</th>
                  <th scope="col">Dead letters</th>
                  <th scope="col">Last delivered</th>
                  <th scope="col">Last attempt</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {subscriptions?.map((s) => (
                  <tr key={s.id} data-subscription-id={s.id}>
                    <td>{s.name}</td>
                    <td>
                      {s.sink.kind === 'SLACK' ? 'Slack' : 'Webhook'} <code>{s.sink.target}</code>
                      {s.sink.channel ? ` ${s.sink.channel}` : ''}
                    </td>
                    <td>{filterSummary(s)}</td>
                    <td>{s.deliveries.pending}</td>
                    <td className={s.deliveries.deadLettered > 0 ? 'failed' : undefined}>{s.deliveries.deadLettered}</td>
                    <td>{formatTime(s.lastDeliveredAt)}</td>
                    <td>
                      {formatTime(s.lastAttemptAt)}
                      {s.lastAttemptAt ? ` · ${lastOutcome(s)}` : ''}
                    </td>
                    <td>
                      <DeleteButton subscription={s} onDeleted={query.reload} />
                    </td>
                  </tr>
                ))}
                {subscriptions && subscriptions.length === 0 && (
                  <tr>
                    <td colSpan={8} className="muted">
                      No subscriptions: create one with <code>rollplane notify create</code> or the createNotificationSubscription mutation.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </ScrollRegion>
        </QueryStatus>
      </Section>
      <Section id="notification-failures" title="Failed deliveries">
        <QueryStatus error={query.error} loading={query.loading} hasData={!!failures} what="failed deliveries">
          <ScrollRegion label="Failed deliveries">
            <table className="data" aria-label="Failed deliveries">
              <thead>
                <tr>
                  <th scope="col">Delivery</th>
                  <th scope="col">Subscription</th>
                  <th scope="col">Event</th>
                  <th scope="col">State</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last error</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {failures?.map((d) => (
                  <FailureRow key={d.id} delivery={d} onReplayed={query.reload} />
                ))}
                {failures && failures.length === 0 && (
                  <tr>
                    <td colSpan={8} className="muted">
                      No failed deliveries.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </ScrollRegion>
          <Pager
            page={pages.page}
            pageInfo={query.data?.notificationDeliveries.pageInfo}
            onPrevious={pages.previous}
            onNext={() => query.data && pages.next(query.data.notificationDeliveries.pageInfo)}
            label="Failed deliveries"
          />
        </QueryStatus>
      </Section>
    </div>
  );
}

function FailureRow({ delivery: d, onReplayed }: { delivery: Delivery; onReplayed: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function replay() {
    setBusy(true);
    setError(null);
    try {
      await gql(ReplayDeliveryDocument, { id: d.id });
      onReplayed();
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  }
  return (
    <tr data-delivery-id={d.id}>
      <td>{d.id}</td>
      <td>{d.subscription.name}</td>
      <td>
        <code>{d.cloudEventType.replace(/^io\.rollplane\./, '').replace(/\.v1$/, '')}</code> #{d.event.id}
        {d.event.rolloutId && (
          <>
            {' '}
            in <a href={`#/rollouts/${encodeURIComponent(d.event.rolloutId)}`}>{d.event.rolloutId}</a>
          </>
        )}
      </td>
      <td>
        <StateBadge state={d.state} />
      </td>
      <td>{d.attempts}</td>
      <td className="message">{lastOutcome(d)}</td>
      <td>{d.state === 'PENDING' ? formatTime(d.nextAttemptAt) : '—'}</td>
      <td>
        <button type="button" onClick={() => void replay()} disabled={busy} aria-label={`Replay delivery ${d.id}`}>
          {busy ? 'Replaying…' : 'Replay'}
        </button>
        {error && (
          <span className="error" role="alert">
            {' '}
            {error}
          </span>
        )}
      </td>
    </tr>
  );
}

const STATES: readonly NotifiableState[] = ['FAILED', 'SUCCEEDED', 'PAUSED', 'ABORTED', 'ROLLED_BACK', 'PROGRESSING', 'PENDING', 'SKIPPED', 'CANCELLED'];

/** A subscription from the UI: a webhook (its generated signing secret shown once) or a Slack incoming webhook. */
function NewSubscription({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'WEBHOOK' | 'SLACK'>('WEBHOOK');
  const [url, setUrl] = useState('');
  const [states, setStates] = useState<NotifiableState[]>(['FAILED']);
  const [oncePerRollout, setOncePerRollout] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  async function create() {
    setBusy(true);
    setError(null);
    setSecret(null);
    try {
      const created = await gql(CreateSubscriptionDocument, {
        input: { name, sink: { kind, url }, filter: states.length ? { states } : {}, ...(oncePerRollout ? { oncePer: ['ROLLOUT'] } : {}) },
      });
      setSecret(created.createNotificationSubscription.signingSecret ?? null);
      setName('');
      setUrl('');
      onCreated();
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  }
  return (
    <form
      className="filters"
      aria-label="New notification subscription"
      onSubmit={(e) => {
        e.preventDefault();
        void create();
      }}
    >
      <label>
        Name <input required value={name} maxLength={100} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Sink{' '}
        <select value={kind} onChange={(e) => setKind(e.target.value as 'WEBHOOK' | 'SLACK')}>
          <option value="WEBHOOK">Webhook (CloudEvents, signed)</option>
          <option value="SLACK">Slack incoming webhook</option>
        </select>
      </label>
      <label>
        URL <input required type="url" value={url} maxLength={2000} onChange={(e) => setUrl(e.target.value)} placeholder="https://…" />
      </label>
      <label>
        States{' '}
        <select multiple value={states} onChange={(e) => setStates([...e.target.selectedOptions].map((o) => o.value as NotifiableState))}>
          {STATES.map((state) => (
            <option key={state} value={state}>
              {state}
            </option>
          ))}
        </select>
      </label>
      <label>
        <input type="checkbox" checked={oncePerRollout} onChange={(e) => setOncePerRollout(e.target.checked)} /> once per rollout
      </label>
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create'}
      </button>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {secret && (
        <p role="status">
          Signing secret, shown this once: <code data-signing-secret>{secret}</code>
        </p>
      )}
    </form>
  );
}

function DeleteButton({ subscription, onDeleted }: { subscription: Subscription; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function remove() {
    if (!confirming) {
      setConfirming(true);
      return;
    }
    setConfirming(false);
    try {
      await gql(DeleteSubscriptionDocument, { id: subscription.id });
      onDeleted();
    } catch (e) {
      setError(describeError(e));
    }
  }
  return (
    <>
      <button type="button" onClick={() => void remove()} aria-label={`${confirming ? 'Confirm deletion of' : 'Delete'} subscription ${subscription.name}`}>
        {confirming ? 'Confirm delete' : 'Delete'}
      </button>
      {error && (
        <span className="error" role="alert">
          {' '}
          {error}
        </span>
      )}
    </>
  );
}
