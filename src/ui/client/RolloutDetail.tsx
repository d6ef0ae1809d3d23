import { useEffect } from 'react';
import { PageTitle, ProgressBar, QueryStatus, Section, Settings, StateBadge, Version, Pager } from './components.js';
import { formatDuration, formatTime } from './format.js';
import { useCursorPages, useLive, useQuery, useThrottled } from './hooks.js';
import { EventTable } from './History.js';
import { kindLabel, useKinds } from './kindUi.js';
import { ROLLOUT_DETAIL, ROLLOUT_EVENTS } from './queries.js';
import { RolloutActions } from './RolloutActions.js';
import { RolloutRun } from './RolloutRun.js';
import { TargetsTable } from './TargetsTable.js';
import type { RolloutDetailQuery } from './generated/graphql.js';

/** The rollout as the detail page shows it: the detail query's selection. */
type Detail = NonNullable<RolloutDetailQuery['rollout']>;

export function RolloutDetail({ id }: { id: string }) {
  const live = useLive();
  const kinds = useKinds();
  const version = live.rolloutVersions.get(id) ?? 0;
  const query = useQuery(ROLLOUT_DETAIL, { id });
  useReloadOn(version, query.reload);
  const detail = query.data?.rollout;
  // The live copy is newer than the fetched one while updates stream in.
  const liveCopy = live.rollouts.find((r) => r.id === id);
  const rollout: Detail | undefined = detail && liveCopy && liveCopy.updatedAt > detail.updatedAt ? { ...detail, ...liveCopy } : (detail ?? undefined);

  return (
    <div className="detail">
      <PageTitle>Rollout {id}</PageTitle>
      <p>
        <a href="#/history">← All rollouts</a>
      </p>
      <QueryStatus error={query.error} loading={query.loading} hasData={query.data !== undefined} what={`rollout ${id}`}>
        {!rollout ? (
          <p className="error">No rollout {id}.</p>
        ) : (
          <>
            <Section id="rollout-detail" title={`Rollout ${rollout.id}`} actions={<StateBadge state={rollout.state} />}>
              <ProgressBar progress={rollout.progress} state={rollout.state} label={`Progress of rollout ${rollout.id}`} />
              <RolloutActions rollout={rollout} />
              <dl className="facts">
                <dt>Kind</dt>
                <dd>{kindLabel(kinds, rollout.kind)}</dd>
                <dt>Version</dt>
                <dd>
                  <Version value={rollout.fromVersion} /> → <Version value={rollout.toVersion} />
                </dd>
                <dt>Message</dt>
                <dd>{rollout.message ?? '—'}</dd>
                <dt>Cause</dt>
                <dd>
                  {rollout.cause.actor ?? 'unknown'}
                  {rollout.cause.commit && (
                    <>
                      {' '}
                      · commit <code>{rollout.cause.commit}</code>
                    </>
                  )}
                  {rollout.cause.runUrl && (
                    <>
                      {' '}
                      · <a href={rollout.cause.runUrl}>CI run</a>
                    </>
                  )}
                  {rollout.cause.message && <> · {rollout.cause.message}</>}
                </dd>
                <dt>Created</dt>
                <dd>{formatTime(rollout.createdAt)}</dd>
                <dt>Started</dt>
                <dd>{formatTime(rollout.startedAt)}</dd>
                <dt>Finished</dt>
                <dd>{formatTime(rollout.finishedAt)}</dd>
                <dt>Duration</dt>
                <dd>{formatDuration(rollout.startedAt ?? rollout.createdAt, rollout.finishedAt)}</dd>
                {rollout.rollbackOf && (
                  <>
                    <dt>Rolls back</dt>
                    <dd>
                      <a href={`#/rollouts/${encodeURIComponent(rollout.rollbackOf.id)}`}>{rollout.rollbackOf.id}</a>
                    </dd>
                  </>
                )}
                <dt>Selector</dt>
                <dd>
                  <Settings value={rollout.selector as Record<string, unknown>} empty="every target" />
                </dd>
                <dt>Strategy</dt>
                <dd>
                  <Settings value={rollout.strategy} empty="the defaults" />
                </dd>
                {rollout.idempotencyKey && (
                  <>
                    <dt>Idempotency key</dt>
                    <dd>
                      <code>{rollout.idempotencyKey}</code>
                    </dd>
                  </>
                )}
              </dl>
            </Section>
            <RolloutRun id={rollout.id} version={version} targets={rollout.progress.total} />
            <Section id="rollout-targets" title={`Targets · ${rollout.progress.total}`}>
              <TargetsTable rolloutId={rollout.id} version={version} />
            </Section>
            <RolloutEvents id={rollout.id} version={version} />
          </>
        )}
      </QueryStatus>
    </div>
  );
}

function RolloutEvents({ id, version }: { id: string; version: number }) {
  const pages = useCursorPages(id);
  const query = useQuery(ROLLOUT_EVENTS, {
    id,
    first: 50,
    after: pages.after,
  });
  useReloadOn(version, query.reload);
  const events = query.data?.rollout?.events;
  return (
    <Section id="rollout-events" title="Events">
      <QueryStatus error={query.error} loading={query.loading} hasData={!!events} what="events">
        <EventTable events={events?.edges.map((e) => e.node) ?? []} label={`Events of rollout ${id}`} />
        <Pager
          label="Rollout events"
          page={pages.page}
          pageInfo={events?.pageInfo}
          onPrevious={pages.previous}
          onNext={() => events && pages.next(events.pageInfo)}
        />
      </QueryStatus>
    </Section>
  );
}

/** Refetches when the rollout was updated live (at most twice a second): keeps the detail and its last page current. */
function useReloadOn(version: number, reload: () => void): void {
  const throttled = useThrottled(version, 500);
  useEffect(() => {
    if (throttled > 0) reload();
  }, [throttled, reload]);
}
