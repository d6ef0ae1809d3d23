import { useState } from 'react';
import { PageTitle, QueryStatus, ScrollRegion, Section, StateBadge } from './components.js';
import { formatTime } from './format.js';
import { type ClustersPageQuery, ClustersPageDocument } from './generated/graphql.js';
import { useDebounced, useQuery } from './hooks.js';
import { useKinds } from './kindUi.js';
import { MaintenanceWindows, WindowCell } from './MaintenanceWindows.js';

type KindFigures = ClustersPageQuery['clusters'][number]['kindFigures'][number];

/**
 * Member clusters (docs/adr/0048-member-clusters.md): each one's health and since when, its Kubernetes version, labels
 * and, a column per registered kind, the versions its targets run with counts and how many drifted (or why they cannot
 * be read: unreachable, syncing; a dash where the cluster does not serve the kind), its maintenance window now and its next change,
 * filtered by a label selector as `rollplane cluster list --selector` is; then the window policies. Registering
 * is an admin's, from the CLI or the API (credentials never pass through the browser).
 */
export function Clusters() {
  const [selector, setSelector] = useState('');
  const debounced = useDebounced(selector.trim(), 300);
  const query = useQuery(ClustersPageDocument, debounced ? { selector: debounced } : {}, { pollMs: 5_000 });
  const clusters = query.data?.clusters;
  const kinds = useKinds();
  return (
    <div className="clusters">
      <PageTitle>Clusters</PageTitle>
      <Section
        id="clusters"
        title={`Member clusters${clusters ? ` · ${clusters.length}` : ''}`}
        actions={
          <label>
            Label selector <input type="search" value={selector} placeholder="env=prod,tier!=edge" onChange={(e) => setSelector(e.target.value)} />
          </label>
        }
      >
        <QueryStatus error={query.error} loading={query.loading} hasData={!!clusters} what="member clusters">
          <ScrollRegion label="Member clusters">
            <table className="data" aria-label="Member clusters">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Health</th>
                  <th scope="col">Since</th>
                  <th scope="col">Version</th>
                  <th scope="col">Labels</th>
                  {kinds.map((k) => (
                    <th scope="col" key={k.kind}>
                      {k.label}
                    </th>
                  ))}
                  <th scope="col">Maintenance window</th>
                  <th scope="col">Source</th>
                </tr>
              </thead>
              <tbody>
                {clusters?.map((c) => (
                  <tr key={c.name} data-cluster={c.name}>
                    <td>{c.name}</td>
                    <td>
                      <StateBadge state={c.health.state} />
                      {c.health.message ? <span className="muted small"> {c.health.message}</span> : null}
                    </td>
                    <td>{formatTime(c.health.since)}</td>
                    <td>{c.health.serverVersion ? <code>{c.health.serverVersion}</code> : '—'}</td>
                    <td>
                      {c.labels.length === 0 ? (
                        <span className="muted">none</span>
                      ) : (
                        c.labels.map((l) => (
                          <code key={l.key} className="label">
                            {l.key}={l.value}
                          </code>
                        ))
                      )}
                    </td>
                    {kinds.map((k) => (
                      <td key={k.kind} data-kind={k.kind}>
                        <KindFiguresCell figures={c.kindFigures.find((f) => f.kind === k.kind)} />
                      </td>
                    ))}
                    <td data-window-state={c.maintenanceWindow.open ? 'open' : 'closed'}>
                      <WindowCell state={c.maintenanceWindow} />
                    </td>
                    <td>{c.source.toLowerCase()}</td>
                  </tr>
                ))}
                {clusters && clusters.length === 0 && (
                  <tr>
                    <td colSpan={7 + kinds.length} className="muted">
                      No member cluster matches. Register one with <code>rollplane cluster add NAME --kubeconfig FILE</code>.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </ScrollRegion>
        </QueryStatus>
      </Section>
      <MaintenanceWindows onChange={query.reload} />
    </div>
  );
}

/** One kind's figures in one cluster: its versions with counts, then its drift; why not, when they cannot be read. */
function KindFiguresCell({ figures }: { figures: KindFigures | undefined }) {
  if (!figures) return <span className="muted">—</span>;
  if (figures.unavailable !== null || figures.versions === null) return <span className="muted small">unavailable: {figures.unavailable}</span>;
  if (figures.versions.length === 0) return <span className="muted">none</span>;
  return (
    <>
      <ul className="version-counts">
        {figures.versions.map((v) => (
          <li key={v.version ?? ''}>
            {v.version ? <code>{v.version}</code> : <span className="muted">unknown</span>} × {v.count}
          </li>
        ))}
        {figures.otherVersionsCount ? <li className="muted">{figures.otherVersionsCount} on other versions</li> : null}
      </ul>
      {figures.drifted ? <span className="drifted">{figures.drifted} drifted</span> : <span className="ok">in sync</span>}
    </>
  );
}
