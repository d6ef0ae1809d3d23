/**
 * The agent pools' own event types (ADR 0051): their payloads' schemas and notification names, typed into the domain
 * by declaration merging (`KindEvents`). Loaded with the kind (its module.ts), defined once.
 */
import { z } from 'zod';
import { defineEvent, orNull, text } from '../../domain/eventPayloads.js';

/** A pool's agent pod recreated: the `agentRecreated` subscription's feed. */
export const agentRecreated = defineEvent(
  'AgentRecreated',
  z.object({
    pool: text,
    oldImage: orNull(text).optional(),
    newImage: text,
    oldPodUid: orNull(text).optional(),
    newPodUid: orNull(text).optional(),
    reason: text.optional(),
    planned: z.boolean().optional(),
    deletedAt: orNull(text).optional(),
    readyAt: orNull(text).optional(),
    seconds: z.number().optional(),
  }),
  'agent.recreated',
);

/** An agent pod stuck Terminating on a crashed node, force-deleted after the grace period. */
export const agentForceDeleted = defineEvent(
  'AgentForceDeleted',
  z.object({
    pool: text,
    pod: text,
    podUid: orNull(text),
    node: text,
    terminatingSeconds: z.number(),
    graceSeconds: z.number(),
  }),
  'agent.force_deleted',
);

/** This kind's event definitions (its module lists them). */
export const AGENT_POOL_EVENTS = [agentRecreated, agentForceDeleted] as const;

declare module '../../domain/eventPayloads.js' {
  interface KindEvents {
    AgentRecreated: typeof agentRecreated;
    AgentForceDeleted: typeof agentForceDeleted;
  }
}
