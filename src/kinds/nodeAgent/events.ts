/**
 * The node agents' own event type (ADR 0051): its payload's schema and notification name, typed into the domain by
 * declaration merging (`KindEvents`). Loaded with the kind (its module.ts), defined once.
 */
import { z } from 'zod';
import { defineEvent, orNull, text } from '../../domain/eventPayloads.js';

/** A node's agent pod replaced: the UI's node-agent feed (`Event.nodeAgentReplacement`). */
export const nodeAgentReplaced = defineEvent(
  'NodeAgentReplaced',
  z.object({
    node: text,
    daemonSet: text,
    oldPod: orNull(text),
    newPod: orNull(text),
    oldImage: orNull(text),
    newImage: text,
    peerPodsRestarted: z.number().optional(),
    seconds: z.number().optional(),
    planned: z.boolean().optional(),
    reason: text.optional(),
    strategy: text.optional(),
  }),
  'node_agent.replaced',
);

/** This kind's event definitions (its module lists them). */
export const NODE_AGENT_EVENTS = [nodeAgentReplaced] as const;

declare module '../../domain/eventPayloads.js' {
  interface KindEvents {
    NodeAgentReplaced: typeof nodeAgentReplaced;
  }
}
