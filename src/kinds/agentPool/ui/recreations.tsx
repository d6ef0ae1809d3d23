import { Version } from '../../../ui/client/components.js';
import { formatSeconds, UNKNOWN_VERSION } from '../../../ui/client/format.js';
import { liveStream } from '../../../ui/client/liveStream.js';
import { type AgentRecreation, SUB_AGENT_RECREATED } from './queries.js';

/** Agent recreations (`agentRecreated`): rows of the live feed, and the series of the recreation chart. */
export const agentRecreations = liveStream({
  key: 'agent',
  label: 'agent recreations',
  what: 'agent recreations',
  query: SUB_AGENT_RECREATED,
  select: (data) => data.agentRecreated,
  idOf: (item) => Number(item.eventId),
  atOf: (item) => item.readyAt ?? '',
  Cells: RecreationCells,
  series: true,
});

function RecreationCells({ item: r }: { item: AgentRecreation }) {
  return (
    <>
      <td>Agent recreated</td>
      <td>
        {r.poolNamespace}/{r.poolName}
      </td>
      <td title={`${r.oldImage ?? UNKNOWN_VERSION} → ${r.newImage}`}>
        → <Version value={r.newImage} /> <span className="muted">({r.reason})</span>
      </td>
      <td>{formatSeconds(r.seconds)}</td>
    </>
  );
}
