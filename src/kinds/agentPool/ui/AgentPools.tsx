import { useState } from 'react';
import { Pager, QueryStatus, ScrollRegion, Section, Version } from '../../../ui/client/components.js';
import { PAGE_SIZE, POLL_MS } from '../../../ui/client/Fleet.js';
import type { AgentPoolFilter } from '../../../ui/client/generated/graphql.js';
import { useCursorPages, useDebounced, useQuery } from '../../../ui/client/hooks.js';
import { AGENT_POOLS } from './queries.js';

/** The Fleet page's agent pools: their images desired and running, read from the controllers' caches. */
export function AgentPools() {
  const [namespace, setNamespace] = useState('');
  const [labelSelector, setLabelSelector] = useState('');
  const [drifted, setDrifted] = useState(false);
  const filterKey = useDebounced(
    JSON.stringify({ namespace: namespace.trim() || null, labelSelector: labelSelector.trim() || null, drifted: drifted || null }),
    300,
  );
  // The filter round-trips through its JSON key (what the debounce compares); the key was built from this type.
  const filter = JSON.parse(filterKey) as AgentPoolFilter;
  const pages = useCursorPages(filterKey);
  const query = useQuery(AGENT_POOLS, { filter, first: PAGE_SIZE, after: pages.after }, { pollMs: POLL_MS });
  const pools = query.data?.agentPools;
  return (
    <Section id="agent-pools" title={`Agent pools${pools ? ` · ${pools.totalCount}` : ''}`}>
      <div className="filters">
        <label>
          Namespace <input value={namespace} onChange={(e) => setNamespace(e.target.value)} />
        </label>
        <label>
          Labels <input value={labelSelector} onChange={(e) => setLabelSelector(e.target.value)} placeholder="env=prod" />
        </label>
        <label>
          <input type="checkbox" checked={drifted} onChange={(e) => setDrifted(e.target.checked)} /> drifted only
        </label>
      </div>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!pools} what="agent pools">
        <ScrollRegion label="Agent pools">
          <table className="data" aria-label="Agent pools">
            <thead>
              <tr>
                <th scope="col">Pool</th>
                <th scope="col">Mode</th>
                <th scope="col">Desired image</th>
                <th scope="col">Running image</th>
                <th scope="col">Agent</th>
                <th scope="col">Flags</th>
              </tr>
            </thead>
            <tbody>
              {pools?.edges.map(({ node: p }) => {
                const drift = p.desiredImage !== p.runningImage;
                return (
                  <tr key={`${p.namespace}/${p.name}`} data-pool={`${p.namespace}/${p.name}`}>
                    <td>
                      {p.namespace}/{p.name}
                    </td>
                    <td>{p.mode}</td>
                    <td>
                      <Version value={p.desiredImage} />
                    </td>
                    <td className={drift ? 'drifted' : undefined}>
                      <Version value={p.runningImage} />
                      {drift && <span className="sr-only"> (drifted)</span>}
                    </td>
                    <td>{p.agentReady ? <span className="ok">Ready</span> : <span className="warn">Not ready</span>}</td>
                    <td>{[p.held && 'held', p.paused && 'paused'].filter(Boolean).join(', ')}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </ScrollRegion>
        <Pager
          label="Agent pools"
          page={pages.page}
          pageInfo={pools?.pageInfo}
          total={pools?.totalCount}
          onPrevious={pages.previous}
          onNext={() => pools && pages.next(pools.pageInfo)}
        />
      </QueryStatus>
    </Section>
  );
}
