import type { Counter, Histogram } from 'prom-client';
import type { Reconciler, Request, Result } from '../controller/Controller.js';
import { MAX_ERROR_CHARS, type SubscriptionRecord } from '../domain/notifications/model.js';
import type { AttemptOutcome, DueDelivery, NotificationStore } from '../domain/notifications/NotificationStore.js';
import { backoffMs, type RetryPolicy, retryAfterMs, verdictOf } from '../domain/notifications/retryPolicy.js';
import type { Logger } from '../log.js';
import type { SinkAnswer, Sinks } from './sinks.js';

export interface DispatcherMetrics {
  /** rollplane_notification_deliveries_total{sink, outcome}: delivered, retried, dead_lettered. */
  deliveries: Counter<'sink' | 'outcome'>;
  /** rollplane_notification_delivery_latency_seconds{sink}: from the event's commit to the sink's 2xx. */
  latency: Histogram<'sink'>;
}

export interface DispatcherOptions {
  store: NotificationStore;
  sinks: Pick<Sinks, 'send'>;
  policy: RetryPolicy;
  /** Deliveries of one subscription in flight at once (ROLLPLANE_NOTIFY_CONCURRENCY). */
  concurrency: number;
  metrics?: DispatcherMetrics;
  logger?: Pick<Logger, 'warn' | 'debug'>;
  now?: () => number;
  random?: () => number;
}

/**
 * Sends the outbox (docs/adr/0035). A reconciler of the controller runtime, keyed by subscription, so that it runs only
 * on the replica holding the leader Lease, as the controllers do, never on the request or reconcile path of a rollout,
 * and stops (aborting what is in flight) the moment that replica steps down. One subscription's deliveries never wait
 * for another's sink: a hanging receiver holds only its own subscription's key.
 *
 * A pass sends up to `concurrency` due deliveries at once (a Slack lane's first only), records each attempt, and asks
 * to run again when the next one is due. Nothing is kept in memory between passes: what is due, retried or
 * dead-lettered is in the table, so a new leader, or this one after a restart, carries on where it was. A delivery
 * whose send was cut short by stepping down is not recorded and goes again: delivery is at least once, and receivers
 * deduplicate on the CloudEvent id (the event id, also the Idempotency-Key header).
 */
export class NotificationDispatcher implements Reconciler {
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(private readonly options: DispatcherOptions) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  async reconcile(request: Request, signal: AbortSignal): Promise<Result> {
    const { store, concurrency } = this.options;
    const subscription = await store.findSubscription(request.name);
    if (!subscription || subscription.deletedAt) return {};
    const due = await store.dueDeliveries(subscription.id, new Date(this.now()), concurrency);
    const sent = await Promise.allSettled(due.map((delivery) => this.deliver(subscription, delivery, signal)));
    const failed = sent.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    if (signal.aborted) return {};
    if (due.length === concurrency) return { requeueAfterMs: 1 };
    const next = await store.nextAttemptAt(subscription.id);
    return next ? { requeueAfterMs: Math.max(1, next.getTime() - this.now()) } : {};
  }

  private async deliver(subscription: SubscriptionRecord, delivery: DueDelivery, signal: AbortSignal): Promise<void> {
    let answer: SinkAnswer | undefined;
    let failure: string | undefined;
    try {
      answer = await this.options.sinks.send(subscription, delivery, signal);
    } catch (error) {
      failure = (error as Error).message;
    }
    // Cut short by stepping down: not an attempt of the sink's making; the next leader sends it again.
    if (!answer && signal.aborted) return;
    const outcome = this.outcomeOf(subscription, delivery, answer, failure);
    const recorded = await this.options.store.recordAttempt(delivery.id, delivery.attempts, outcome);
    const sink = subscription.sinkKind.toLowerCase();
    const counted = outcome.state === 'DELIVERED' ? 'delivered' : outcome.state === 'DEAD_LETTER' ? 'dead_lettered' : 'retried';
    this.options.metrics?.deliveries.inc({ sink, outcome: counted });
    if (outcome.state === 'DELIVERED') {
      this.options.metrics?.latency.observe({ sink }, Math.max(0, outcome.at.getTime() - delivery.event.createdAt.getTime()) / 1000);
    } else if (outcome.state === 'DEAD_LETTER') {
      this.options.logger?.warn(
        { subscription: subscription.id, delivery: delivery.id, event: delivery.eventId, attempts: delivery.attempts + 1, error: outcome.error },
        'notification dead-lettered',
      );
    }
    if (!recorded)
      this.options.logger?.debug({ delivery: delivery.id }, 'a delivery changed while it was sent (replayed or cancelled); its attempt is not recorded');
  }

  private outcomeOf(subscription: SubscriptionRecord, delivery: DueDelivery, answer: SinkAnswer | undefined, failure: string | undefined): AttemptOutcome {
    const { policy } = this.options;
    const now = this.now();
    const at = new Date(now);
    const statusCode = answer?.statusCode ?? null;
    const verdict = answer ? (answer.problem !== undefined && verdictOf(answer.statusCode) === 'delivered' ? 'retry' : verdictOf(answer.statusCode)) : 'retry';
    if (verdict === 'delivered') {
      const rolloutId = delivery.event.rolloutId;
      const startsThread = subscription.sinkKind === 'SLACK' && !delivery.threadTs && rolloutId && answer?.threadTs;
      return {
        state: 'DELIVERED',
        at,
        statusCode,
        error: null,
        nextAttemptAt: null,
        ...(startsThread ? { thread: { rolloutId, ts: answer!.threadTs! } } : {}),
      };
    }
    const error = (answer ? `HTTP ${answer.statusCode}${answer.problem ? `: ${answer.problem}` : ''}` : (failure ?? 'failed')).slice(0, MAX_ERROR_CHARS);
    const attempts = delivery.attempts + 1;
    if (verdict === 'permanent' || attempts >= policy.maxAttempts) return { state: 'DEAD_LETTER', at, statusCode, error, nextAttemptAt: null };
    const wait = Math.max(backoffMs(attempts, policy, this.random), retryAfterMs(answer?.retryAfter, now, policy.maxMs) ?? 0);
    return { state: 'PENDING', at, statusCode, error, nextAttemptAt: new Date(now + wait) };
  }
}
