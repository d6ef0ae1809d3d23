import { randomBytes } from 'node:crypto';
import { ConflictError, NotFoundError, ValidationError } from '../../errors.js';
import { checkPageSize, MAX_EVENT_ID, pageOfRows } from '../../util/pagination.js';
import {
  DELIVERY_STATES,
  type DeliveryState,
  EMPTY_FILTER,
  NOTIFIABLE_STATES,
  type NotifiableState,
  type NotificationFilter,
  ONCE_PER_FIELDS,
  type OncePerField,
  SINK_KINDS,
  type SinkKind,
  type SubscriptionRecord,
} from './model.js';
import type { DeliveryCounts, DeliveryFilter, DeliveryWithEvent, NotificationStore, SubscriptionChange } from './NotificationStore.js';
import { notificationTypeOf } from './routing.js';
import { EventType, ROLLOUT_KINDS, type RolloutKind } from '../events.js';
import { isDns1123Label, isValidName } from '../../util/dnsNames.js';
import { parseLabelSelector } from '../labelSelector.js';

/**
 * Checks that a sink URL may be called (the SSRF guard, notify/targetGuard.ts): resolves to the URL, or rejects with a
 * reason (never the URL itself, which may hold a secret).
 */
export type TargetCheck = (url: string) => Promise<unknown>;

/** Sinks and filters as the API gives them (already bounded in size at the edge: graphql/inputLimits.ts). */
export interface SinkInput {
  kind: SinkKind;
  url: string;
  secret?: string | null;
  token?: string | null;
  channel?: string | null;
}

export interface FilterInput {
  types?: readonly string[] | null;
  kinds?: readonly string[] | null;
  clusters?: readonly string[] | null;
  clusterSelector?: string | null;
  states?: readonly string[] | null;
  rolloutIds?: readonly string[] | null;
}

export interface SubscriptionInput {
  name: string;
  sink: SinkInput;
  filter?: FilterInput | null;
  oncePer?: readonly string[] | null;
}

export interface SubscriptionUpdate {
  name?: string | null;
  sink?: SinkInput | null;
  filter?: FilterInput | null;
  oncePer?: readonly string[] | null;
  /** WEBHOOK: a new generated signing secret, returned once. */
  rotateSecret?: boolean | null;
}

/** A subscription as the API shows it: never its secret, and its URL only as far as it holds no secret. */
export interface SubscriptionView {
  id: string;
  name: string;
  sink: { kind: SinkKind; target: string; channel: string | null; signed: boolean; threaded: boolean };
  filter: NotificationFilter;
  oncePer: readonly OncePerField[];
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastDeliveredAt: Date | null;
}

export interface DeliveryView extends DeliveryWithEvent {
  cloudEventType: string;
}

/** At most this many subscriptions: every transaction that appends events matches them all. */
export const MAX_SUBSCRIPTIONS = 100;
export const MAX_FILTER_CLUSTERS = 50;
export const MAX_FILTER_ROLLOUTS = 100;
export const MAX_URL_CHARS = 2000;
const MAX_NAME_CHARS = 100;
const SECRET_RE = /^[\x21-\x7e]{32,256}$/;
const SLACK_TOKEN_RE = /^xox[a-z]-[\x21-\x7e]{8,250}$/;
const SLACK_CHANNEL_RE = /^[#@]?[A-Za-z0-9._-]{1,80}$/;
const ID_RE = /^[\x21-\x7e]{1,200}$/;

const newSubscriptionId = () => `ns_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;
const newSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

function distinct<T extends string>(values: readonly string[] | null | undefined, allowed: readonly T[], field: string): T[] {
  const out = [...new Set(values ?? [])];
  const bad = out.find((v) => !(allowed as readonly string[]).includes(v));
  if (bad !== undefined) throw new ValidationError(field, `"${bad.slice(0, 40)}" is not one of ${allowed.join(', ')}`);
  return out as T[];
}

function strings(values: readonly string[] | null | undefined, valid: (value: string) => boolean, max: number, field: string, what: string): string[] {
  const out = [...new Set(values ?? [])];
  if (out.length > max) throw new ValidationError(field, `at most ${max} ${what}`);
  const bad = out.find((v) => !valid(v));
  if (bad !== undefined) throw new ValidationError(field, `"${bad.slice(0, 40)}" is not a valid ${what.replace(/s$/, '')}`);
  return out;
}

export function filterFrom(input: FilterInput | null | undefined, field = 'input.filter'): NotificationFilter {
  if (!input) return EMPTY_FILTER;
  return {
    types: distinct<EventType>(input.types, Object.values(EventType), `${field}.types`),
    kinds: distinct<RolloutKind>(input.kinds, ROLLOUT_KINDS, `${field}.kinds`),
    clusters: strings(input.clusters, (c) => isValidName(isDns1123Label, c), MAX_FILTER_CLUSTERS, `${field}.clusters`, 'cluster names'),
    clusterSelector: clusterSelectorFrom(input.clusterSelector, `${field}.clusterSelector`),
    states: distinct<NotifiableState>(input.states, NOTIFIABLE_STATES, `${field}.states`),
    rolloutIds: strings(input.rolloutIds, (id) => ID_RE.test(id), MAX_FILTER_ROLLOUTS, `${field}.rolloutIds`, 'rollout ids'),
  };
}

/** A label selector over the clusters' labels, checked as Kubernetes would (BAD_USER_INPUT with the position). */
function clusterSelectorFrom(input: string | null | undefined, field: string): string {
  const selector = input?.trim() ?? '';
  if (selector !== '') parseLabelSelector(selector, field);
  return selector;
}

/** In the fixed order of ONCE_PER_FIELDS, so that the key is the same however the caller ordered them. */
export function oncePerFrom(input: readonly string[] | null | undefined, field = 'input.oncePer'): OncePerField[] {
  const given = distinct<OncePerField>(input, ONCE_PER_FIELDS, field);
  return ONCE_PER_FIELDS.filter((f) => given.includes(f));
}

/**
 * What of a sink URL may be shown: a webhook's origin and path, never its query; a Slack sink's origin only (an
 * incoming webhook's path is its secret).
 */
export function displayTarget(kind: SinkKind, raw: string): string {
  try {
    const url = new URL(raw);
    if (kind === 'SLACK') return `${url.origin}/…`;
    return `${url.origin}${url.pathname}${url.search ? '?…' : ''}`;
  } catch {
    return '…';
  }
}

export function viewOf(record: SubscriptionRecord): SubscriptionView {
  const hasToken = record.sinkKind === 'SLACK' && record.secret !== '';
  return {
    id: record.id,
    name: record.name,
    sink: {
      kind: record.sinkKind,
      target: displayTarget(record.sinkKind, record.url),
      channel: record.channel || null,
      signed: record.sinkKind === 'WEBHOOK',
      threaded: hasToken,
    },
    filter: record.filter,
    oncePer: record.oncePer,
    createdBy: record.createdBy,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    deletedAt: record.deletedAt,
    lastAttemptAt: record.lastAttemptAt,
    lastStatusCode: record.lastStatusCode,
    lastError: record.lastError,
    lastDeliveredAt: record.lastDeliveredAt,
  };
}

function deliveryView(delivery: DeliveryWithEvent): DeliveryView {
  return { ...delivery, cloudEventType: notificationTypeOf(delivery.event) };
}

/**
 * Notification subscriptions and their deliveries, as the admin API manages and reads them (docs/adr/0035). Secrets
 * are generated here, returned once, and never again; sink URLs pass the SSRF guard before they are saved.
 */
export class NotificationService {
  private readonly changeListeners: ((subscriptionId: string) => void)[] = [];

  constructor(
    private readonly store: NotificationStore,
    private readonly checkTarget: TargetCheck,
    private readonly now: () => number = Date.now,
  ) {}

  /** Called after a subscription is created, changed, deleted or replayed here (the leader's dispatcher wakes at once). */
  onChange(listener: (subscriptionId: string) => void): void {
    this.changeListeners.push(listener);
  }

  private changed(id: string): void {
    for (const listener of this.changeListeners) listener(id);
  }

  private async sink(input: SinkInput, field: string): Promise<{ sinkKind: SinkKind; url: string; secret: string; channel: string; generated?: string }> {
    const kind = distinct<SinkKind>([input.kind], SINK_KINDS, `${field}.kind`)[0]!;
    if (input.url.length > MAX_URL_CHARS) throw new ValidationError(`${field}.url`, `must be at most ${MAX_URL_CHARS} characters`);
    try {
      await this.checkTarget(input.url);
    } catch (error) {
      throw new ValidationError(`${field}.url`, (error as Error).message, { cause: error });
    }
    if (kind === 'WEBHOOK') {
      if (input.token != null || input.channel != null) throw new ValidationError(field, 'token and channel are for SLACK sinks');
      if (input.secret != null && !SECRET_RE.test(input.secret)) {
        throw new ValidationError(`${field}.secret`, 'must be 32 to 256 printable ASCII characters without spaces');
      }
      const generated = input.secret == null ? newSecret() : undefined;
      return { sinkKind: kind, url: input.url, secret: input.secret ?? generated!, channel: '', ...(generated ? { generated } : {}) };
    }
    if (input.secret != null) throw new ValidationError(`${field}.secret`, 'is for WEBHOOK sinks (a SLACK sink takes a bot token)');
    if (input.token != null && !SLACK_TOKEN_RE.test(input.token)) throw new ValidationError(`${field}.token`, 'must be a Slack token (xoxb-…)');
    if ((input.token == null) !== (input.channel == null)) throw new ValidationError(`${field}.channel`, 'a token needs a channel, and a channel a token');
    if (input.channel != null && !SLACK_CHANNEL_RE.test(input.channel)) throw new ValidationError(`${field}.channel`, 'must be a Slack channel id or name');
    return { sinkKind: kind, url: input.url, secret: input.token ?? '', channel: input.channel ?? '' };
  }

  private name(value: string, field: string): string {
    const name = value.trim();
    if (name.length === 0 || name.length > MAX_NAME_CHARS || [...name].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
      throw new ValidationError(field, `must be 1 to ${MAX_NAME_CHARS} characters without control characters`);
    }
    return name;
  }

  async create(input: SubscriptionInput, createdBy: string | null): Promise<{ subscription: SubscriptionView; signingSecret: string | null }> {
    const name = this.name(input.name, 'input.name');
    const filter = filterFrom(input.filter);
    const oncePer = oncePerFrom(input.oncePer);
    const sink = await this.sink(input.sink, 'input.sink');
    if ((await this.store.countSubscriptions()) >= MAX_SUBSCRIPTIONS) {
      throw new ConflictError(`there are ${MAX_SUBSCRIPTIONS} subscriptions already; delete one first`);
    }
    const record = await this.store.insertSubscription(
      { id: newSubscriptionId(), name, sinkKind: sink.sinkKind, url: sink.url, secret: sink.secret, channel: sink.channel, filter, oncePer, createdBy },
      new Date(this.now()),
    );
    this.changed(record.id);
    return { subscription: viewOf(record), signingSecret: sink.generated ?? null };
  }

  async update(id: string, input: SubscriptionUpdate): Promise<{ subscription: SubscriptionView; signingSecret: string | null }> {
    const current = await this.store.findSubscription(id);
    if (!current || current.deletedAt) throw new NotFoundError(`notification subscription ${id} not found`);
    const change: SubscriptionChange = {};
    if (input.name != null) change.name = this.name(input.name, 'input.name');
    if (input.filter != null) change.filter = filterFrom(input.filter);
    if (input.oncePer != null) change.oncePer = oncePerFrom(input.oncePer);
    let signingSecret: string | null = null;
    if (input.sink != null) {
      const sink = await this.sink(input.sink, 'input.sink');
      Object.assign(change, { sinkKind: sink.sinkKind, url: sink.url, secret: sink.secret, channel: sink.channel });
      signingSecret = sink.generated ?? null;
    }
    if (input.rotateSecret) {
      if ((change.sinkKind ?? current.sinkKind) !== 'WEBHOOK') throw new ValidationError('input.rotateSecret', 'only a WEBHOOK sink has a signing secret');
      signingSecret = newSecret();
      change.secret = signingSecret;
    }
    const record = await this.store.updateSubscription(id, change, new Date(this.now()));
    if (!record) throw new NotFoundError(`notification subscription ${id} not found`);
    this.changed(id);
    return { subscription: viewOf(record), signingSecret };
  }

  async delete(id: string): Promise<SubscriptionView> {
    const record = await this.store.deleteSubscription(id, new Date(this.now()));
    if (!record) throw new NotFoundError(`notification subscription ${id} not found`);
    this.changed(id);
    return viewOf(record);
  }

  /** Deleted ones too (a delivery names its subscription). */
  async get(id: string): Promise<SubscriptionView | undefined> {
    const record = await this.store.findSubscription(id);
    return record && viewOf(record);
  }

  async list(first: number | null | undefined, after: string | null | undefined): Promise<{ items: SubscriptionView[]; hasNextPage: boolean }> {
    const size = checkPageSize(first, 100);
    const rows = await this.store.listSubscriptions(after ?? undefined, size + 1);
    return pageOfRows(rows, size, viewOf);
  }

  counts(ids: readonly string[]): Promise<Map<string, DeliveryCounts>> {
    return this.store.deliveryCounts(ids);
  }

  async deliveries(filter: DeliveryFilter, first: number | null | undefined, after: string | null | undefined) {
    const size = checkPageSize(first, 100);
    const before = after == null ? undefined : deliveryId(after, 'after');
    const rows = await this.store.listDeliveries(filter, before, size + 1);
    return pageOfRows(rows, size, deliveryView);
  }

  async delivery(id: number): Promise<DeliveryView | undefined> {
    const row = await this.store.findDelivery(id);
    return row && deliveryView(row);
  }

  /** Sends one delivery again, whatever its state but CANCELLED (its subscription was deleted). */
  async replay(id: number): Promise<DeliveryView> {
    const current = await this.store.findDelivery(id);
    if (!current) throw new NotFoundError(`notification delivery ${id} not found`);
    if (current.state === 'CANCELLED') throw new ConflictError(`delivery ${id} was cancelled with its subscription; it cannot be replayed`);
    if ((await this.store.replay({ ids: [id] }, new Date(this.now()))) === 0) throw new ConflictError(`delivery ${id} cannot be replayed`);
    this.changed(current.subscriptionId);
    return deliveryView((await this.store.findDelivery(id))!);
  }

  /** Sends a subscription's deliveries of the events fromEventId..toEventId (inclusive) in `states` again. */
  async replayRange(input: { subscriptionId: string; fromEventId: number; toEventId: number; states?: readonly string[] | null }): Promise<number> {
    const subscription = await this.store.findSubscription(input.subscriptionId);
    if (!subscription || subscription.deletedAt) throw new NotFoundError(`notification subscription ${input.subscriptionId} not found`);
    if (input.fromEventId > input.toEventId) throw new ValidationError('input.toEventId', 'must not be before fromEventId');
    const states = distinct<DeliveryState>(input.states ?? ['DEAD_LETTER'], DELIVERY_STATES, 'input.states').filter((s) => s !== 'CANCELLED');
    const replayed = await this.store.replay(
      { subscriptionId: subscription.id, fromEventId: input.fromEventId, toEventId: input.toEventId, states },
      new Date(this.now()),
    );
    if (replayed > 0) this.changed(subscription.id);
    return replayed;
  }
}

/** Delivery ids and cursors: positive integers (the outbox's autoincrement). */
export function deliveryId(value: string, field: string): number {
  if (!/^\d{1,10}$/.test(value) || Number(value) < 1 || Number(value) > MAX_EVENT_ID) {
    throw new ValidationError(field, `must be a delivery id (a positive integer), got "${value.slice(0, 40)}"`);
  }
  return Number(value);
}
