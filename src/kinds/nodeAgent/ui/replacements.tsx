import { Version } from '../../../ui/client/components.js';
import { formatSeconds, UNKNOWN_VERSION } from '../../../ui/client/format.js';
import type { NodeAgentReplacedSubscription } from '../../../ui/client/generated/graphql.js';
import { liveStream } from '../../../ui/client/liveStream.js';
import { SUB_NODE_AGENT_REPLACED } from './queries.js';

/** A node's agent replaced by a node-agent rollout (the NodeAgentReplaced event's typed payload). */
export interface NodeAgentReplacement {
  eventId: string;
  rolloutId: string | null;
  node: string;
  daemonSet: string | null;
  oldImage: string | null;
  newImage: string | null;
  peerPodsRestarted: number | null;
  seconds: number | null;
  at: string;
}

/** Node agents replaced (NodeAgentReplaced events): rows of the live feed. */
export const nodeAgentReplacements = liveStream({
  key: 'node',
  label: 'node-agent replacements',
  what: 'node agents',
  query: SUB_NODE_AGENT_REPLACED,
  select: (data) => toNodeAgentReplacement(data.events),
  idOf: (item) => Number(item.eventId),
  atOf: (item) => item.at,
  Cells: ReplacementCells,
});

/** The feed row of a NodeAgentReplaced event: its typed payload (Event.nodeAgentReplacement, read by the server through its schema). */
function toNodeAgentReplacement(event: NodeAgentReplacedSubscription['events']): NodeAgentReplacement {
  const replaced = event.nodeAgentReplacement;
  return {
    eventId: event.id,
    rolloutId: event.rolloutId,
    node: replaced?.node ?? '',
    daemonSet: replaced?.daemonSet ?? null,
    oldImage: replaced?.oldImage ?? null,
    newImage: replaced?.newImage ?? null,
    peerPodsRestarted: replaced?.peerPodsRestarted ?? null,
    seconds: replaced?.seconds ?? null,
    at: event.createdAt,
  };
}

function ReplacementCells({ item: n }: { item: NodeAgentReplacement }) {
  return (
    <>
      <td>Node agent replaced</td>
      <td>node {n.node}</td>
      <td title={`${n.daemonSet ?? ''} ${n.oldImage ?? UNKNOWN_VERSION} → ${n.newImage ?? UNKNOWN_VERSION}`}>
        → <Version value={n.newImage} />
        {n.peerPodsRestarted !== null && <span className="muted"> ({n.peerPodsRestarted} peer pods back)</span>}
      </td>
      <td>{formatSeconds(n.seconds)}</td>
    </>
  );
}
