/**
 * The payload of each history event type, as a schema (ADR 0042, 0046), and its name in notifications (ADR 0051).
 * Every writer is checked against it at compile time (`NewEvent` in events.ts is a union over the types whose payload
 * is `EventPayload<T>`), and readers get it typed through `readPayload`, never by string key on an untyped record.
 * Stored payloads of any age stay readable: a field that is absent or does not match reads as absent.
 *
 * The shared types are defined here; a rollout kind's own types (an agent recreated, a cluster upgrade observed …)
 * in its folder's `events.ts` (ADR 0051), with `defineEvent`, and typed here by declaration merging (`KindEvents`), as
 * its contract is (`KindShapes`): the domain names none of them.
 */
import { z } from 'zod';
import type { EventType } from './events.js';

const rolloutState = z.enum(['PENDING', 'PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK']);
const targetState = z.enum(['PENDING', 'PROGRESSING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED']);
/** Text in a payload (the kinds' schemas build on these too). */
export const text = z.string();
export const orNull = <T extends z.ZodType>(schema: T) => schema.nullable();

/**
 * One event type as rollplane knows it: its payload's schema and its notification name (the `<subject>.<what>` of
 * its CloudEvents type, `io.rollplane.<notification>.v1`).
 */
export interface EventDefinition<T extends EventType = EventType, S extends z.ZodObject = z.ZodObject> {
  readonly type: T;
  readonly payload: S;
  readonly notification: string;
}

/** Every defined event type's definition, the shared ones and those of the kinds whose `events.ts` is loaded. */
const DEFINED = new Map<EventType, EventDefinition>();

/**
 * Defines an event type (once): what `readPayload`, routing and the notifications' names read it by. A kind defines
 * its own in its `events.ts`; the server's list of kinds (src/kinds/index.ts) loads them all, and checks at start that
 * every `EventType` is defined.
 */
export function defineEvent<T extends EventType, S extends z.ZodObject>(type: T, payload: S, notification: string): EventDefinition<T, S> {
  if (DEFINED.has(type)) throw new Error(`event type ${type} is defined twice`);
  const definition = { type, payload, notification };
  DEFINED.set(type, definition);
  return definition;
}

/** The event types shared by every kind (rollouts, targets, an upstream controller changed). */
export const SHARED_EVENTS = {
  RolloutStateChanged: defineEvent(
    'RolloutStateChanged',
    z.object({
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
    'rollout',
  ),
  TargetStateChanged: defineEvent('TargetStateChanged', z.object({ from: orNull(targetState), to: targetState, error: orNull(text) }), 'target'),
  TargetFailed: defineEvent('TargetFailed', z.object({ error: orNull(text) }), 'target.error'),
  UpstreamControllerChanged: defineEvent(
    'UpstreamControllerChanged',
    z.object({
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
      /** Not a change: the image the controller deployed when rollplane first saw it (`oldImage` null), the baseline. */
      firstSeen: z.boolean().optional(),
      /**
       * Found at the first look of a reconciler that started at this time (ISO): the change happened while no
       * reconciler watched, at a time nobody knows — before the rollouts launched since that start, possibly.
       */
      detectedAtStartOf: text.optional(),
      /**
       * Which API server the change was seen through (a hash of its URL, never the URL): a cluster name registered again
       * at another cluster starts a new baseline there instead of recording a change from the old cluster's image.
       */
      endpoint: text.optional(),
    }),
    'upstream.changed',
  ),
  // A staged rollout's waves and gates (issue 30, ADR 0065). `waveName`/`gateKey`, not `wave`/`gate`: those names
  // are routing fields (ROUTING_FIELDS), which an event's own schema must not take over.
  WaveStarted: defineEvent('WaveStarted', z.object({ waveName: text, clusters: z.array(text) }), 'wave.started'),
  WaveFinished: defineEvent(
    'WaveFinished',
    z.object({ waveName: text, outcome: z.enum(['SUCCEEDED', 'FAILED']), reason: orNull(text), durationSeconds: z.number().optional() }),
    'wave.finished',
  ),
  GateWaiting: defineEvent('GateWaiting', z.object({ gateKey: text, type: text, reason: text }), 'gate.waiting'),
  GateApproved: defineEvent('GateApproved', z.object({ gateKey: text, by: text, role: text, comment: orNull(text) }), 'gate.approved'),
  GateRejected: defineEvent('GateRejected', z.object({ gateKey: text, by: text, role: text, comment: orNull(text) }), 'gate.rejected'),
  GateEnded: defineEvent(
    'GateEnded',
    z.object({ gateKey: text, type: text, state: z.enum(['PASSED', 'FAILED']), reason: text, waitedSeconds: z.number().optional() }),
    'gate.ended',
  ),
  // Two sources (issue 30): a staged run's wave held or admitted again (waveName, with the rollout), or a window policy's
  // own opening or closing (policy, no rollout: the clusters it selects, the first ANNOUNCED_CLUSTERS of clusterCount).
  WindowClosed: defineEvent(
    'WindowClosed',
    z.object({
      waveName: text.optional(),
      policy: text.optional(),
      clusters: z.array(text),
      clusterCount: z.number().optional(),
      reason: text,
      until: orNull(text),
    }),
    'window.closed',
  ),
  WindowOpened: defineEvent(
    'WindowOpened',
    z.object({
      waveName: text.optional(),
      policy: text.optional(),
      clusters: z.array(text),
      clusterCount: z.number().optional(),
      reason: text.optional(),
      until: orNull(text).optional(),
    }),
    'window.opened',
  ),
} as const;

/**
 * Each kind's own event types, keyed by type: `{ AgentRecreated: typeof agentRecreated }`. Empty here: each kind fills
 * its entries in by declaration merging from its `events.ts` (ADR 0051), so the domain types every event's payload
 * without importing, or naming, any kind.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by the kinds' events (declaration merging)
export interface KindEvents {}

type Definitions = typeof SHARED_EVENTS & KindEvents;
type SchemaOf<T extends EventType> = T extends keyof Definitions ? (Definitions[T] extends EventDefinition<T, infer S> ? S : never) : never;

/** What a writer puts in an event of type `T`. */
export type EventPayload<T extends EventType> = z.input<SchemaOf<T>>;

/** The event types not defined yet (none once every kind's `events.ts` is compiled in): the registry checks it. */
export type UndefinedEventTypes = Exclude<EventType, keyof Definitions>;

/** An event type's definition; undefined when neither shared nor defined by a loaded kind. */
export function eventDefinition(type: EventType): EventDefinition | undefined {
  return DEFINED.get(type);
}

/**
 * An event's stored payload read as its type's: each field that is present and matches its schema, the rest absent
 * (a payload written by an older rollplane, or by hand, never stops a reader).
 */
export function readPayload<T extends EventType>(type: T, stored: unknown): Partial<z.output<SchemaOf<T>>> {
  const definition = DEFINED.get(type);
  if (!definition) throw new Error(`event type ${type} is not defined (its kind's events.ts is not loaded)`);
  const raw = typeof stored === 'object' && stored !== null ? (stored as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(definition.payload.shape as Record<string, z.ZodType>)) {
    if (raw[key] === undefined) continue;
    const parsed = field.safeParse(raw[key]);
    if (parsed.success) out[key] = parsed.data;
  }
  return out as Partial<z.output<SchemaOf<T>>>;
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
  const own = DEFINED.get(type)?.payload.shape as Record<string, unknown> | undefined;
  const out: Record<string, string> = {};
  for (const [key, field] of Object.entries(ROUTING_FIELDS.shape)) {
    if (raw[key] === undefined || (own && key in own)) continue;
    const parsed = field.safeParse(raw[key]);
    if (parsed.success) out[key] = parsed.data;
  }
  return out;
}
