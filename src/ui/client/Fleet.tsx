import { useState } from 'react';
import { PageTitle, Pager, QueryStatus, ScrollRegion, Section, Version } from './components.js';
import { formatTime } from './format.js';
import { useCursorPages, useQuery } from './hooks.js';
import { kindLabel, useKinds } from './kindUi.js';
import { DRIFT } from './queries.js';
import type { RolloutKind } from './types.js';

/** Fleet state is read from the controllers' caches; a poll keeps it fresh without a subscription per object. */
export const POLL_MS = 5_000;
/** Rows per page of a kind's Fleet section. */
export const PAGE_SIZE = 50;

/** The drift of every kind, then each kind's sections (KindUi.Fleet) in the kinds' order. */
export function Fleet() {
  const kinds = useKinds();
  return (
    <div className="fleet">
      <PageTitle>Fleet</PageTitle>
      <DriftSummary />
      {kinds.map(({ kind, Fleet: KindFleet }) => (
        <KindFleet key={kind} />
      ))}
    </div>
  );
}

function DriftSummary() {
  const kinds = useKinds();
  const [kind, setKind] = useState<RolloutKind | ''>('');
  const pages = useCursorPages(kind);
  const query = useQuery(DRIFT, { kind: kind || null, first: 20, after: pages.after }, { pollMs: POLL_MS });
  const drift = query.data?.drift;
  return (
    <Section id="drift" title={`Drift${drift ? ` · ${drift.totalCount}` : ''}`}>
      <div className="filters">
        <label>
          Kind{' '}
          <select value={kind} onChange={(e) => setKind(e.target.value as RolloutKind | '')}>
            <option value="">all</option>
            {kinds.map((k) => (
              <option key={k.kind} value={k.kind}>
                {k.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!drift} what="drift">
        {drift && drift.totalCount === 0 ? (
          <p className="ok">Every target runs its desired version.</p>
        ) : (
          <>
            <ScrollRegion label="Drifted targets">
              <table className="data" aria-label="Drifted targets">
                <thead>
                  <tr>
                    <th scope="col">Kind</th>
                    <th scope="col">Target</th>
                    <th scope="col">Desired</th>
                    <th scope="col">Running</th>
                    <th scope="col">Since</th>
                  </tr>
                </thead>
                <tbody>
                  {drift?.edges.map(({ node: d }) => (
                    <tr key={`${d.kind}/${d.namespace}/${d.name}`}>
                      <td>{kindLabel(kinds, d.kind)}</td>
                      <td>{d.namespace ? `${d.namespace}/${d.name}` : d.name}</td>
                      <td>
                        <Version value={d.desiredVersion} />
                      </td>
                      <td className="drifted">
                        <Version value={d.runningVersion} />
                      </td>
                      <td>{formatTime(d.since)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollRegion>
            <Pager
              label="Drift"
              page={pages.page}
              pageInfo={drift?.pageInfo}
              total={drift?.totalCount}
              onPrevious={pages.previous}
              onNext={() => drift && pages.next(drift.pageInfo)}
            />
          </>
        )}
      </QueryStatus>
    </Section>
  );
}
