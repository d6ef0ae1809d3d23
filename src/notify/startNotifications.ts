import type { Config } from '../config.js';
import type { Manager } from '../controller/Manager.js';
import type { EventBus } from '../domain/EventBus.js';
import type { Route } from '../domain/notifications/model.js';
import type { NotificationStore } from '../domain/notifications/NotificationStore.js';
import { MAX_SUBSCRIPTIONS, NotificationService } from '../domain/notifications/NotificationService.js';
import { matchesNotificationFilter } from '../domain/notifications/routing.js';
import type { Logger } from '../log.js';
import type { AppMetrics } from '../metrics.js';
import { VERSION } from '../version.js';
import { NotificationDispatcher } from './NotificationDispatcher.js';
import { Sinks } from './sinks.js';
import { TargetGuard } from './targetGuard.js';

/** Subscriptions delivered at once (each one's deliveries `concurrency` at a time). */
const SUBSCRIPTION_WORKERS = 8;
/**
 * How often the leader looks at every subscription regardless of wake-ups: it catches deliveries replayed on another
 * replica (whose replay publishes no event), and refreshes the routes it wakes subscriptions by.
 */
const POLL_MS = 5_000;
const PRUNE_INTERVAL_MS = 3600_000;
const DAY_MS = 24 * 3600_000;

export interface NotificationsDeps {
  config: Pick<Config, 'notifications' | 'publicUrl'>;
  store: NotificationStore;
  manager: Manager;
  bus: EventBus;
  metrics: AppMetrics;
  logger: Logger;
}

/**
 * Notifications (docs/adr/0035): the admin service on every replica, and the dispatcher as a controller of the
 * Manager, so it sends only while this replica holds the leader Lease. The leader hears of new deliveries from its
 * event bus (every replica's events reach it: the outbox rows commit with them), wakes the subscriptions they match,
 * and polls all of them every few seconds for what a bus cannot tell (a replay made on another replica).
 */
export function startNotifications(deps: NotificationsDeps): { service: NotificationService; scrape(): Promise<void>; stop(): Promise<void> } {
  const { config, store, manager, bus, metrics } = deps;
  const logger = deps.logger.child({ component: 'notifications' });
  const guard = new TargetGuard(config.notifications.allowNetworks);
  const service = new NotificationService(store, (url) => guard.check(url));
  const sinks = new Sinks({
    guard,
    timeoutMs: config.notifications.timeoutMs,
    source: config.publicUrl ?? 'urn:rollplane',
    ...(config.publicUrl ? { uiUrl: config.publicUrl } : {}),
    userAgent: `rollplane/${VERSION}`,
    replica: manager.identity,
  });
  const dispatcher = new NotificationDispatcher({
    store,
    sinks,
    policy: { maxAttempts: config.notifications.maxAttempts, baseMs: config.notifications.backoffBaseMs, maxMs: config.notifications.backoffMaxMs },
    concurrency: config.notifications.concurrency,
    metrics: { deliveries: metrics.notificationDeliveries, latency: metrics.notificationLatency },
    logger,
  });
  const controller = manager.controller({ name: 'notifications', workers: SUBSCRIPTION_WORKERS, reconciler: dispatcher });

  let routes: readonly Route[] = [];
  const refresh = async (): Promise<string[]> => {
    const subscriptions = await store.listSubscriptions(undefined, MAX_SUBSCRIPTIONS + 1);
    routes = subscriptions;
    return subscriptions.map((s) => s.id);
  };
  const wakeAll = () => {
    if (!manager.isLeader()) return;
    refresh().then(
      (ids) => {
        for (const id of ids) controller.enqueue(id);
      },
      (error: unknown) => logger.warn({ err: error }, 'cannot list the notification subscriptions'),
    );
  };
  controller.watch({ resync: () => wakeAll() });
  // Only filters and queues keys: the bus calls it inside the publishing commit's synchronous step.
  const stopListening = bus.subscribe((event) => {
    if (!manager.isLeader()) return;
    for (const route of routes) if (matchesNotificationFilter(event, route.filter)) controller.enqueue(route.subscriptionId);
  });
  service.onChange((id) => {
    wakeAll();
    controller.enqueue(id);
  });
  const poll = setInterval(wakeAll, POLL_MS);
  poll.unref();
  const prune = () => {
    if (!manager.isLeader()) return;
    store.pruneBefore(new Date(Date.now() - config.notifications.retentionDays * DAY_MS)).then(
      (pruned) => pruned > 0 && logger.info({ pruned }, 'pruned notification deliveries past their retention'),
      (error: unknown) => logger.warn({ err: error }, 'cannot prune notification deliveries'),
    );
  };
  manager.onStartedLeading(() => prune());
  const pruner = setInterval(prune, PRUNE_INTERVAL_MS);
  pruner.unref();

  return {
    service,
    async scrape() {
      const { pending, oldestCreatedAt } = await store.queueStats();
      metrics.notificationQueueDepth.set(pending);
      metrics.notificationQueueAge.set(oldestCreatedAt ? Math.max(0, (Date.now() - oldestCreatedAt.getTime()) / 1000) : 0);
    },
    async stop() {
      clearInterval(poll);
      clearInterval(pruner);
      stopListening();
      sinks.close();
    },
  };
}
