import { readPages } from '../pages.js';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ValidationError } from '../../errors.js';
import { EventType as EVENT_TYPE, ROLLOUT_KINDS } from '../../domain/events.js';
import { ExitCode } from '../exitCodes.js';
import * as flags from '../flags.js';
import { table } from '../format.js';
import {
  CreateNotificationSubscriptionDocument,
  DeleteNotificationSubscriptionDocument,
  type EventType,
  type NotifiableState,
  NotificationDeliveriesDocument,
  type NotificationDeliveryFieldsFragment,
  type NotificationDeliveryState,
  type NotificationOncePer,
  type NotificationSubscriptionFieldsFragment,
  NotificationSubscriptionsDocument,
  ReplayNotificationDeliveriesDocument,
  ReplayNotificationDeliveryDocument,
  type RolloutKind,
} from '../generated/graphql.js';
import { addCommonOptions, clientAction, type CliIo } from '../runtime.js';

/** `rollplane notify`: notification subscriptions and their deliveries (admin token required; docs/notifications.md). */

/** The API's EventType and RolloutKind enums' values, in their order: the domain's lists of them. */
const EVENT_TYPES: readonly EventType[] = Object.values(EVENT_TYPE);
const KINDS: readonly RolloutKind[] = ROLLOUT_KINDS;
const STATES: readonly NotifiableState[] = ['PENDING', 'PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK', 'SKIPPED', 'CANCELLED'];
const ONCE_PER: readonly NotificationOncePer[] = ['ROLLOUT', 'WAVE', 'CLUSTER', 'GATE', 'TARGET'];
const DELIVERY_STATES: readonly NotificationDeliveryState[] = ['PENDING', 'DELIVERED', 'DEAD_LETTER', 'CANCELLED'];

/** Rows per request when listing; `--limit` beyond it is fetched page by page. */
const PAGE = 100;

/** One of `allowed`, whatever its case (`--state failed` is FAILED). */
function choice<T extends string>(allowed: readonly T[]) {
  return (raw: string): T => {
    const found = allowed.find((a) => a.toLowerCase() === raw.trim().toLowerCase());
    if (!found) throw new flags.InvalidArgument(`Expected one of ${allowed.join(', ')}.`);
    return found;
  };
}

const id = (what: string) => (raw: string) => {
  if (raw.length === 0 || raw.length > 200 || /\s/.test(raw)) throw new flags.InvalidArgument(`Expected ${what}.`);
  return raw;
};
const eventId = (raw: string) => {
  if (!/^\d{1,10}$/.test(raw)) throw new flags.InvalidArgument('Expected an event id.');
  return raw;
};

/** A secret read from a file (never from a flag: every local user can read a command line in `ps`). */
function secretFrom(file: string | undefined, what: string): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new ValidationError(what, `cannot read it from ${file}: ${(error as Error).message}`);
  }
}

const when = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d{3}Z$/, 'Z') : '-');

export function formatSubscriptions(subscriptions: readonly NotificationSubscriptionFieldsFragment[]): string {
  if (subscriptions.length === 0) return 'no notification subscriptions';
  return table(
    ['ID', 'NAME', 'SINK', 'PENDING', 'DEAD', 'LAST DELIVERED', 'LAST ERROR'],
    subscriptions.map((s) => [
      s.id,
      s.name,
      `${s.sink.kind.toLowerCase()} ${s.sink.target}`,
      String(s.deliveries.pending),
      String(s.deliveries.deadLettered),
      when(s.lastDeliveredAt),
      s.lastError ?? '-',
    ]),
  );
}

export function formatDeliveries(deliveries: readonly NotificationDeliveryFieldsFragment[]): string {
  if (deliveries.length === 0) return 'no deliveries';
  return table(
    ['ID', 'STATE', 'ATTEMPTS', 'TYPE', 'EVENT', 'SUBSCRIPTION', 'NEXT', 'LAST'],
    deliveries.map((d) => [
      d.id,
      d.state,
      String(d.attempts),
      d.cloudEventType.replace(/^io\.rollplane\./, '').replace(/\.v1$/, ''),
      d.event.id,
      d.subscription.name,
      d.state === 'PENDING' ? when(d.nextAttemptAt) : '-',
      d.lastError ?? (d.lastStatusCode !== null && d.lastStatusCode !== undefined ? `HTTP ${d.lastStatusCode}` : '-'),
    ]),
  );
}

interface CreateFlags {
  webhook?: string;
  slack?: string;
  secretFile?: string;
  tokenFile?: string;
  channel?: string;
  type?: EventType[];
  kind?: RolloutKind[];
  state?: NotifiableState[];
  rollout?: string[];
  cluster?: string[];
  clusterSelector?: string;
  oncePer?: NotificationOncePer[];
}

export function registerNotify(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const notify = program.command('notify').description('Notification subscriptions and deliveries (admin token required)');

  addCommonOptions(notify.command('create'))
    .description('Subscribe a webhook (signed CloudEvents) or Slack to events; a generated signing secret is printed once, on stdout')
    .argument('<name>', 'a name for people', flags.text(100))
    .option('--webhook <url>', 'POST each event as a CloudEvent to this URL')
    .option('--slack <url>', 'a Slack incoming webhook, or https://slack.com/api/chat.postMessage with --token-file and --channel')
    .option('--secret-file <file>', 'webhook: the signing secret (32-256 characters) from this file (- for stdin); generated when omitted')
    .option('--token-file <file>', 'Slack: a bot token from this file (- for stdin), for one thread per rollout')
    .option('--channel <channel>', 'Slack with a token: the channel', flags.text(81))
    .option('--type <type>', `only these event types (repeatable): ${EVENT_TYPES.join(', ')}`, flags.repeatable(choice(EVENT_TYPES)))
    .option('--kind <kind>', 'only these rollout kinds (repeatable)', flags.repeatable(choice(KINDS)))
    .option('--state <state>', 'only events of rollouts or targets moving to these states (repeatable)', flags.repeatable(choice(STATES)))
    .option('--rollout <id>', 'only these rollouts (repeatable)', flags.repeatable(id('a rollout id')))
    .option('--cluster <name>', 'only these member clusters (repeatable)', flags.repeatable(flags.dnsLabel))
    .option('--cluster-selector <selector>', 'only member clusters matching this label selector (with --cluster: either)', flags.labelSelector)
    .option('--once-per <field>', `send once per these stable fields (repeatable): ${ONCE_PER.join(', ')}`, flags.repeatable(choice(ONCE_PER)))
    .action(
      clientAction(io, setExitCode, async (ctx, name: string) => {
        const f = ctx.flags<CreateFlags>();
        if ((f.webhook === undefined) === (f.slack === undefined)) throw new ValidationError('--webhook', 'give one of --webhook <url> and --slack <url>');
        const secret = secretFrom(f.secretFile, 'signing secret');
        const token = secretFrom(f.tokenFile, 'Slack token');
        const sink = f.webhook
          ? { kind: 'WEBHOOK' as const, url: f.webhook, ...(secret !== undefined ? { secret } : {}) }
          : { kind: 'SLACK' as const, url: f.slack!, ...(token !== undefined ? { token } : {}), ...(f.channel ? { channel: f.channel } : {}) };
        const filter = {
          ...(f.type ? { types: f.type } : {}),
          ...(f.kind ? { kinds: f.kind } : {}),
          ...(f.state ? { states: f.state } : {}),
          ...(f.rollout ? { rolloutIds: f.rollout } : {}),
          ...(f.cluster ? { clusters: f.cluster } : {}),
          ...(f.clusterSelector ? { clusterSelector: f.clusterSelector } : {}),
        };
        const data = await ctx.client.request(CreateNotificationSubscriptionDocument, {
          input: { name, sink, filter, ...(f.oncePer ? { oncePer: f.oncePer } : {}) },
        });
        const created = data.createNotificationSubscription;
        if (!ctx.json) {
          ctx.info(
            `created notification subscription ${created.subscription.id} (${created.subscription.name}, ${created.subscription.sink.kind.toLowerCase()} ${created.subscription.sink.target})${
              created.signingSecret ? '; store the signing secret now, it cannot be shown again' : ''
            }`,
          );
        }
        ctx.result(created, created.signingSecret ?? '');
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(notify.command('list'))
    .description('List subscriptions with their queue, dead letters and last dispatch or error (never their secrets)')
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const { nodes: subscriptions } = await readPages(
          async (first, after) => (await ctx.client.request(NotificationSubscriptionsDocument, { first, after })).notificationSubscriptions,
          PAGE,
        );
        ctx.result({ subscriptions }, formatSubscriptions(subscriptions));
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(notify.command('delete'))
    .description('Delete a subscription: its pending deliveries are cancelled, its deliveries stay visible')
    .argument('<id>', 'subscription id', id('a subscription id'))
    .action(
      clientAction(io, setExitCode, async (ctx, subscriptionId: string) => {
        const data = await ctx.client.request(DeleteNotificationSubscriptionDocument, { id: subscriptionId });
        ctx.result({ subscription: data.deleteNotificationSubscription }, `deleted notification subscription ${data.deleteNotificationSubscription.id}`);
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(notify.command('deliveries'))
    .description('Deliveries, newest first: state, attempts, next attempt, last status or error')
    .option('--subscription <id>', "only this subscription's", id('a subscription id'))
    .option('--state <state>', `only these states (repeatable): ${DELIVERY_STATES.join(', ')}`, flags.repeatable(choice(DELIVERY_STATES)))
    .option('--rollout <id>', "only this rollout's events", id('a rollout id'))
    .option('--limit <n>', 'at most this many', flags.integer(1, 10_000), 50)
    .action(
      clientAction(io, setExitCode, async (ctx) => {
        const f = ctx.flags<{ subscription?: string; state?: NotificationDeliveryState[]; rollout?: string; limit: number }>();
        const filter = {
          ...(f.subscription ? { subscriptionId: f.subscription } : {}),
          ...(f.state ? { states: f.state } : {}),
          ...(f.rollout ? { rolloutId: f.rollout } : {}),
        };
        const { nodes: deliveries } = await readPages(
          async (first, after) => (await ctx.client.request(NotificationDeliveriesDocument, { filter, first, after })).notificationDeliveries,
          PAGE,
          f.limit,
        );
        ctx.result({ deliveries }, formatDeliveries(deliveries));
        return ExitCode.Ok;
      }),
    );

  addCommonOptions(notify.command('replay'))
    .description('Send a delivery again, or a range of events of one subscription (--subscription, --from, --to)')
    .argument('[delivery]', 'delivery id', id('a delivery id'))
    .option('--subscription <id>', 'replay this subscription’s deliveries of a range of events', id('a subscription id'))
    .option('--from <event>', 'first event id of the range', eventId)
    .option('--to <event>', 'last event id of the range', eventId)
    .option('--state <state>', 'deliveries in these states (repeatable; default DEAD_LETTER)', flags.repeatable(choice(DELIVERY_STATES)))
    .action(
      clientAction(io, setExitCode, async (ctx, delivery: string | undefined) => {
        const f = ctx.flags<{ subscription?: string; from?: string; to?: string; state?: NotificationDeliveryState[] }>();
        if (delivery !== undefined) {
          if (f.subscription || f.from || f.to) throw new ValidationError('delivery', 'give a delivery id, or --subscription with --from and --to, not both');
          const data = await ctx.client.request(ReplayNotificationDeliveryDocument, { id: delivery });
          ctx.result({ delivery: data.replayNotificationDelivery }, `delivery ${data.replayNotificationDelivery.id} is due again`);
          return ExitCode.Ok;
        }
        if (!f.subscription || !f.from || !f.to) throw new ValidationError('delivery', 'give a delivery id, or --subscription with --from and --to');
        const data = await ctx.client.request(ReplayNotificationDeliveriesDocument, {
          input: { subscriptionId: f.subscription, fromEventId: f.from, toEventId: f.to, ...(f.state ? { states: f.state } : {}) },
        });
        ctx.result(data.replayNotificationDeliveries, `${data.replayNotificationDeliveries.replayed} deliveries are due again`);
        return ExitCode.Ok;
      }),
    );
}
