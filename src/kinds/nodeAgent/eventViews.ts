import { readPayload } from '../../domain/eventPayloads.js';
import { nodeAgentReplaced } from './events.js';

/**
 * A NodeAgentReplaced event's payload read through its schema (`Event.nodeAgentReplacement`); the node is the event's
 * object when the payload lacks it.
 */
export function nodeAgentReplacementView(event: { payload: unknown; object?: { name: string } | null }) {
  const p = readPayload(nodeAgentReplaced.type, event.payload);
  return {
    node: p.node ?? event.object?.name ?? '',
    daemonSet: p.daemonSet ?? null,
    oldPod: p.oldPod ?? null,
    newPod: p.newPod ?? null,
    oldImage: p.oldImage ?? null,
    newImage: p.newImage ?? null,
    peerPodsRestarted: p.peerPodsRestarted ?? null,
    seconds: p.seconds ?? null,
    planned: p.planned ?? null,
    reason: p.reason ?? null,
  };
}
