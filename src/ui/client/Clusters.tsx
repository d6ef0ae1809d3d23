import { useState } from 'react';
import { PageTitle, QueryStatus, ScrollRegion, Section, StateBadge } from './components.js';
import { formatTime } from './format.js';
import { ClustersPageDocument } from './generated/graphql.js';
import { useDebounced, useQuery } from './hooks.js';

/**
 * Member clusters (docs/adr/0048-member-clusters.md): each one's health and since when, its Kubernetes version, labels
 * and the rollout kinds it serves, filtered by a label selector as `rollplane cluster list --selector` is. Registering
 * is an admin's, from the CLI or the API (credentials never pass through the browser).
 */
export function Clusters() {
  const [selector, setSelector] = useState('');
  const debounced = useDebounced(selector.trim(), 300);
  const query = useQuery(ClustersPageDocument, debounced ? { selector: debounced } : {}, { pollMs: 5_000 });
  const clusters = query.data?.clusters;
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
                  <th scope="col">Kinds</th>
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
                    <td>{c.kinds.length ? c.kinds.map((k) => k.toLowerCase().replace('_', ' ')).join(', ') : <span className="muted">none</span>}</td>
                    <td>{c.source.toLowerCase()}</td>
                  </tr>
                ))}
                {clusters && clusters.length === 0 && (
                  <tr>
                    <td colSpan={7} className="muted">
                      No member cluster matches. Register one with <code>rollplane cluster add NAME --kubeconfig FILE</code>.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </ScrollRegion>
        </QueryStatus>
      </Section>
    </div>
  );
}
