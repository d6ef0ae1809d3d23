import { useState } from 'react';
import { PageTitle, Pager, QueryStatus, ScrollRegion, Section, Version } from './components.js';
import { formatTime, kindLabel } from './format.js';
import { useCursorPages, useDebounced, useQuery } from './hooks.js';
import { AGENT_POOLS, CLUSTER_VERSIONS, DRIFT, NODE_AGENT_SETS, VIRTUAL_CLUSTERS } from './queries.js';
import type { AgentPoolFilter, VirtualClusterFilter } from './generated/graphql.js';
import type { RolloutKind } from './types.js';

/** Fleet state is read from the controllers' caches; a poll keeps it fresh without a subscription per object. */
const POLL_MS = 5_000;
const PAGE_SIZE = 50;

export function Fleet() {
  return (
    <div className="fleet">
      <PageTitle>Fleet</PageTitle>
      <DriftSummary />
      <AgentPools />
      <VirtualClusters />
      <ClusterVersions />
      <NodeAgentSets />
    </div>
  );
}

function DriftSummary() {
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
            {Object.entries(kindLabel).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
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
                      <td>{kindLabel[d.kind] ?? d.kind}</td>
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

function AgentPools() {
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

function VirtualClusters() {
  const [version, setVersion] = useState('');
  const [behind, setBehind] = useState(false);
  const filterKey = useDebounced(JSON.stringify({ clusterVersionName: version.trim() || null, behind: behind ? true : null }), 300);
  const filter = JSON.parse(filterKey) as VirtualClusterFilter;
  const pages = useCursorPages(filterKey);
  const query = useQuery(VIRTUAL_CLUSTERS, { filter, first: PAGE_SIZE, after: pages.after }, { pollMs: POLL_MS });
  const clusters = query.data?.virtualClusters;
  return (
    <Section id="virtual-clusters" title={`Virtual clusters${clusters ? ` · ${clusters.totalCount}` : ''}`}>
      <div className="filters">
        <label>
          Cluster version <input value={version} onChange={(e) => setVersion(e.target.value)} />
        </label>
        <label>
          <input type="checkbox" checked={behind} onChange={(e) => setBehind(e.target.checked)} /> behind only
        </label>
      </div>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!clusters} what="virtual clusters">
        <ScrollRegion label="Virtual clusters">
          <table className="data" aria-label="Virtual clusters">
            <thead>
              <tr>
                <th scope="col">Cluster</th>
                <th scope="col">Cluster version</th>
                <th scope="col">Applied</th>
                <th scope="col">Phase</th>
                <th scope="col">Up to date</th>
                <th scope="col">Opted in</th>
              </tr>
            </thead>
            <tbody>
              {clusters?.edges.map(({ node: c }) => (
                <tr key={`${c.namespace}/${c.name}`}>
                  <td>
                    {c.namespace}/{c.name}
                  </td>
                  <td>{c.clusterVersionName}</td>
                  <td>
                    <code>{c.appliedResourceVersion ?? '—'}</code>
                  </td>
                  <td>{c.phase ?? '—'}</td>
                  <td>{c.upToDate ? <span className="ok">yes</span> : <span className="drifted">behind</span>}</td>
                  <td>{c.readyForUpgrade ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollRegion>
        <Pager
          label="Virtual clusters"
          page={pages.page}
          pageInfo={clusters?.pageInfo}
          total={clusters?.totalCount}
          onPrevious={pages.previous}
          onNext={() => clusters && pages.next(clusters.pageInfo)}
        />
      </QueryStatus>
    </Section>
  );
}

function ClusterVersions() {
  const pages = useCursorPages('');
  const query = useQuery(CLUSTER_VERSIONS, { first: PAGE_SIZE, after: pages.after }, { pollMs: POLL_MS });
  const versions = query.data?.clusterVersions;
  return (
    <Section id="cluster-versions" title={`Cluster versions${versions ? ` · ${versions.totalCount}` : ''}`}>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!versions} what="cluster versions">
        <ScrollRegion label="Cluster versions">
          <table className="data" aria-label="Cluster versions">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">resourceVersion</th>
                <th scope="col">apiserver</th>
                <th scope="col">controller-manager</th>
                <th scope="col">Clusters</th>
                <th scope="col">Behind</th>
              </tr>
            </thead>
            <tbody>
              {versions?.edges.map(({ node: v }) => (
                <tr key={v.name}>
                  <td>{v.name}</td>
                  <td>
                    <code>{v.resourceVersion}</code>
                  </td>
                  <td>
                    <Version value={v.apiServerImage} />
                  </td>
                  <td>
                    <Version value={v.controllerManagerImage} />
                  </td>
                  <td>{v.clusterCount}</td>
                  <td className={v.behindCount ? 'drifted' : undefined}>{v.behindCount}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollRegion>
        <Pager
          label="Cluster versions"
          page={pages.page}
          pageInfo={versions?.pageInfo}
          total={versions?.totalCount}
          onPrevious={pages.previous}
          onNext={() => versions && pages.next(versions.pageInfo)}
        />
      </QueryStatus>
    </Section>
  );
}

function NodeAgentSets() {
  const pages = useCursorPages('');
  const query = useQuery(NODE_AGENT_SETS, { first: 20, after: pages.after }, { pollMs: POLL_MS });
  const sets = query.data?.nodeAgentSets;
  return (
    <Section id="node-agents" title={`Node-agent sets${sets ? ` · ${sets.totalCount}` : ''}`}>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!sets} what="node-agent sets">
        {sets?.edges.map(({ node: set }) => {
          const upToDate = set.nodes.filter((n) => n.upToDate).length;
          return (
            <details key={`${set.namespace}/${set.name}`} className="node-agent-set">
              <summary>
                <strong>
                  {set.namespace}/{set.name}
                </strong>{' '}
                desired <Version value={set.desiredImage} /> ·{' '}
                <span className={upToDate === set.nodes.length ? 'ok' : 'drifted'}>
                  {upToDate}/{set.nodes.length} nodes up to date
                </span>
              </summary>
              <ScrollRegion label={`Nodes of ${set.namespace}/${set.name}`}>
                <table className="data" aria-label={`Nodes of ${set.namespace}/${set.name}`}>
                  <thead>
                    <tr>
                      <th scope="col">Node</th>
                      <th scope="col">Running image</th>
                      <th scope="col">Agent</th>
                      <th scope="col">Peer pods ({set.peerRuntimeClass})</th>
                    </tr>
                  </thead>
                  <tbody>
                    {set.nodes.map((n) => (
                      <tr key={n.node}>
                        <td>{n.node}</td>
                        <td className={n.upToDate ? undefined : 'drifted'}>
                          <Version value={n.image} />
                        </td>
                        <td>{n.ready ? <span className="ok">Ready</span> : <span className="warn">Not ready</span>}</td>
                        <td>
                          {n.peerPodsReady}/{n.peerPods} ready
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollRegion>
            </details>
          );
        })}
        {sets && sets.edges.length === 0 && <p className="muted">No node-agent sets.</p>}
        <Pager
          label="Node-agent sets"
          page={pages.page}
          pageInfo={sets?.pageInfo}
          total={sets?.totalCount}
          onPrevious={pages.previous}
          onNext={() => sets && pages.next(sets.pageInfo)}
        />
      </QueryStatus>
    </Section>
  );
}
