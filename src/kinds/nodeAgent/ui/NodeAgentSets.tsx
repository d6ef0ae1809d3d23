import { Pager, QueryStatus, ScrollRegion, Section, Version } from '../../../ui/client/components.js';
import { POLL_MS } from '../../../ui/client/Fleet.js';
import { useCursorPages, useQuery } from '../../../ui/client/hooks.js';
import { NODE_AGENT_SETS } from './queries.js';

/** The Fleet page's node-agent sets: each node's agent image and its peer pods. */
export function NodeAgentSets() {
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
