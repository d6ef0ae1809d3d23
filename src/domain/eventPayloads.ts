/**
 * The payload of each history event type, as a schema (ADR 0042, 0046). Every writer is checked against it at compile
 * time (`NewEvent` in events.ts is a union over the types whose payload is `EventPayload<T>`), and readers get it typed
 * through `readPayload`, never by string key on an untyped record. Stored payloads of any age stay readable: a field that is absent or does not match reads as absent.
 */
import { z } from 'zod';
import type { EventType } from './events.js';

const rolloutState = z.enum(['PENDING', 'PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK']);
const targetState = z.enum(['PENDING', 'PROGRESSING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED']);
const text = z.string();
const orNull = <T extends z.ZodType>(schema: T) => schema.nullable();

export const EVENT_PAYLOADS = {
  RolloutStateChanged: z.object({
    from: orNull(rolloutState),
    to: rolloutState,
    message: orNull(text).optional(),
    /**
     * On the launch (from null): the version the rollout goes to (null: each target's previous version, see
     * Rollout.toVersion) and how many targets it has.
     */
    toVersion: orNull(text).optional(),
    targets: z.number().optional(),
  }),
  TargetStateChanged: z.object({ from: orNull(targetState), to: targetState, error: orNull(text) }),
  TargetFailed: z.object({ error: orNull(text) }),
  AgentRecreated: z.object({
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
  AgentForceDeleted: z.object({
    pool: text,
    pod: text,
    podUid: orNull(text),
    node: text,
    terminatingSeconds: z.number(),
    graceSeconds: z.number(),
  }),
  UpstreamControllerChanged: z.object({
    /** `namespace/name` of the upstream controller (the vm-dhcp-controller Deployment, a node-agent DaemonSet). */
    controller: text,
    daemonSet: text.optional(),
    oldImage: orNull(text).optional(),
    newImage: text,
    planned: z.boolean(),
    changedThrough: z.enum(['addon', 'deployment']).optional(),
    owner: text.optional(),
    /** The rollout whose change this one undid. */
    reverts: text.optional(),
  }),
  ClusterUpgradeObserved: z.object({
    cluster: text,
    clusterVersion: text,
    resourceVersion: text,
    specVersion: text,
    seconds: z.number(),
    outcome: z.enum(['SUCCEEDED', 'FAILED', 'ALREADY_APPLIED']),
    components: z.array(z.object({ component: z.enum(['apiserver-service', 'pki', 'apiserver', 'controller-manager']), seconds: z.number() })),
    error: orNull(text),
    rootCaGenerated: z.boolean().optional(),
  }),
  NodeAgentReplaced: z.object({
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
} as const satisfies { [T in EventType]: z.ZodObject };

/** What a writer puts in an event of type `T`. */
export type EventPayload<T extends EventType> = z.input<(typeof EVENT_PAYLOADS)[T]>;

/**
 * An event's stored payload read as its type's: each field that is present and matches its schema, the rest absent
 * (a payload written by an older rollplane, or by hand, never stops a reader).
 */
export function readPayload<T extends EventType>(type: T, stored: unknown): Partial<z.output<(typeof EVENT_PAYLOADS)[T]>> {
  const raw = typeof stored === 'object' && stored !== null ? (stored as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(EVENT_PAYLOADS[type].shape as Record<string, z.ZodType>)) {
    if (raw[key] === undefined) continue;
    const parsed = field.safeParse(raw[key]);
    if (parsed.success) out[key] = parsed.data;
  }
  return out as Partial<z.output<(typeof EVENT_PAYLOADS)[T]>>;
}

/** A routing field's value as a key part: non-empty text, or a finite number written as text. */
const routingValue = z.union([z.string().min(1), z.number().transform(String)]);

/**
 * Fields any event may carry beside its type's own, for notification routing (ADR 0035): the member cluster (issue
 * 29) and a staged rollout's wave and gate (issue 30). No writer sets them yet; routing reads them through this
 * schema. A type whose own schema gives one of these names another meaning does not carry it: ClusterUpgradeObserved's
 * `cluster` is the VirtualCluster (`namespace/name`), not a member cluster.
 */
export const ROUTING_FIELDS = z.object({ cluster: routingValue, wave: routingValue, gate: routingValue });

export type RoutingFields = Partial<z.output<typeof ROUTING_FIELDS>>;

/** The routing fields an event of type `type` carries in its stored payload (absent when missing or malformed). */
export function readRoutingFields(type: EventType, stored: unknown): RoutingFields {
  const raw = typeof stored === 'object' && stored !== null ? (stored as Record<string, unknown>) : {};
  const own = EVENT_PAYLOADS[type]?.shape as Record<string, unknown> | undefined;
  const out: Record<string, string> = {};
  for (const [key, field] of Object.entries(ROUTING_FIELDS.shape)) {
    if (raw[key] === undefined || (own && key in own)) continue;
    const parsed = field.safeParse(raw[key]);
    if (parsed.success) out[key] = parsed.data;
  }
  return out;
}
