import { useState } from 'react';
import { Pager, QueryStatus, ScrollRegion, Section, Version } from '../../../ui/client/components.js';
import { PAGE_SIZE, POLL_MS } from '../../../ui/client/Fleet.js';
import type { VirtualClusterFilter } from '../../../ui/client/generated/graphql.js';
import { useCursorPages, useDebounced, useQuery } from '../../../ui/client/hooks.js';
import { CLUSTER_VERSIONS, VIRTUAL_CLUSTERS } from './queries.js';

/** The Fleet page's sections of virtual clusters: the clusters, then their cluster versions. */
export function VirtualClusterFleet() {
  return (
    <>
      <VirtualClusters />
      <ClusterVersions />
    </>
  );
}

/** Each virtual cluster's cluster version, applied or behind. */
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

/** The cluster versions: what each carries and how many clusters are behind it. */
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
