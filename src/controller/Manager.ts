import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ConflictError } from '../errors.js';
import { translateKubeError, type KubeClients } from '../kube/index.js';
import { Controller, type ControllerOptions, type ControllerSnapshot } from './Controller.js';
import { Informer, type InformerOptions } from './Informer.js';
import { LeaderElector } from './LeaderElector.js';

export interface LeaderElectionSettings {
  enabled: boolean;
  namespace: string;
  name: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface ManagerOptions {
  clients: Pick<KubeClients, 'watch' | 'coordination' | 'core'>;
  registry: Registry;
  logger: Logger;
  leaderElection: LeaderElectionSettings;
  /** False for an API-only replica: informers run (the API reads their caches), controllers never do. */
  runControllers?: boolean;
  /** Whether this replica can do a leader's work right now (LeaderElectorOptions.canLead); default: always. */
  canLead?: () => boolean | Promise<boolean>;
  /**
   * Controllers start and stop when the owner says (`lead()`, `unlead()`), not on a Lease of the Manager's own: a member
   * cluster's runtime, whose controllers run while this replica holds the member's shard (src/clusters/ShardLeases.ts).
   * `leaderElection` is then ignored.
   */
  leadOnDemand?: boolean;
}

/**
 * controller-runtime's Manager: owns informers and controllers, starts the informers and waits for their caches, then
 * runs the controllers only while this replica holds the leader Lease. Informers keep running on every replica so that
 * readers of their caches (an API) work on every replica. Knows nothing of what the controllers reconcile.
 */
export class Manager {
  readonly registry: Registry;
  readonly logger: Logger;
  readonly identity = `${os.hostname()}-${randomBytes(4).toString('hex')}`;
  private readonly informers: Informer<KubernetesObject>[] = [];
  private readonly informersByKey = new Map<string, Informer<KubernetesObject>>();
  private readonly controllers: Controller[] = [];
  private readonly clients: ManagerOptions['clients'];
  private readonly leadingListeners: (() => void | Promise<void>)[] = [];
  private readonly stoppedListeners: (() => void | Promise<void>)[] = [];
  private readonly canLead: ManagerOptions['canLead'];
  private readonly settings: LeaderElectionSettings;
  private readonly runControllers: boolean;
  private readonly leadOnDemand: boolean;
  private synced = false;
  private elector: LeaderElector | undefined;
  private leading = false;
  private started = false;

  constructor(options: ManagerOptions) {
    this.clients = options.clients;
    this.registry = options.registry;
    this.logger = options.logger.child({ component: 'manager' });
    this.settings = options.leaderElection;
    this.runControllers = options.runControllers ?? true;
    this.canLead = options.canLead;
    this.leadOnDemand = options.leadOnDemand ?? false;
  }

  /**
   * The informer for a collection: shared by every controller that asks for the same path and selectors (client-go's
   * shared informers), each adding its indexers; the first caller's list function and options are the ones used.
   */
  informer<T extends KubernetesObject>(options: Omit<InformerOptions<T>, 'watch'>): Informer<T> {
    const key = `${options.path}?labelSelector=${options.labelSelector ?? ''}&fieldSelector=${options.fieldSelector ?? ''}`;
    const shared = this.informersByKey.get(key) as Informer<T> | undefined;
    if (shared) {
      if (options.indexers) shared.addIndexers(options.indexers);
      return shared;
    }
    const informer = new Informer<T>({
      ...options,
      watch: this.clients.watch,
      onError: (error) => {
        this.logger.warn({ err: error, informer: options.name }, 'informer error; retrying with backoff');
        options.onError?.(error);
      },
      onMalformed: (reason, from) => {
        this.logger.warn({ informer: options.name, reason, from }, 'informer skipped an object that is not a Kubernetes object');
        options.onMalformed?.(reason, from);
      },
    });
    this.informers.push(informer as unknown as Informer<KubernetesObject>);
    this.informersByKey.set(key, informer as unknown as Informer<KubernetesObject>);
    if (this.started) informer.start();
    return informer;
  }

  controller(options: Omit<ControllerOptions, 'registry' | 'logger'>): Controller {
    const controller = new Controller({ ...options, registry: this.registry, logger: this.logger.child({ controller: options.name }) });
    this.controllers.push(controller);
    if (this.leading) controller.start();
    return controller;
  }

  /**
   * Runs each time this replica starts its controllers, in registration order, just before they start (state cached
   * while not leading is stale).
   */
  onStartedLeading(listener: () => void | Promise<void>): void {
    this.leadingListeners.push(listener);
  }

  /** Runs each time this replica stops its controllers (it lost the lease, or stops), after they stopped. */
  onStoppedLeading(listener: () => void | Promise<void>): void {
    this.stoppedListeners.push(listener);
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** Readiness: caches synced and (when leading) controllers running. */
  checkReady(): void {
    const unsynced = this.informers.filter((i) => !i.hasSynced()).map((i) => i.name);
    if (unsynced.length > 0) throw new Error(`informer caches not synced: ${unsynced.join(', ')}`);
    if (this.leading) {
      const stopped = this.controllers.filter((c) => !c.running).map((c) => c.name);
      if (stopped.length > 0) throw new Error(`controllers not running: ${stopped.join(', ')}`);
    }
  }

  /** Resyncs every running controller (Controller.resync): a dependency they all share is back. */
  resync(): void {
    for (const controller of this.controllers) controller.resync();
  }

  /**
   * Each informer's collection and the resourceVersion it is current with: compared with the API server's, it tells
   * whether every watch has caught up (with snapshots(), whether the controllers are quiet).
   */
  informerVersions(): {
    name: string;
    path: string;
    labelSelector?: string;
    fieldSelector?: string;
    resourceVersion: string | undefined;
    /** Objects skipped as malformed since the informer started (Informer.stats.skipped). */
    skipped: number;
  }[] {
    return this.informers.map((i) => ({ ...i.selection(), resourceVersion: i.lastSyncResourceVersion(), skipped: i.stats.skipped }));
  }

  snapshots(): ControllerSnapshot[] {
    return this.controllers.map((c) => c.snapshot());
  }

  async start(): Promise<void> {
    this.started = true;
    for (const informer of this.informers) informer.start();
    await Promise.all(this.informers.map((i) => i.waitForSync()));
    this.synced = this.started;
    this.logger.info({ informers: this.informers.length }, 'informer caches synced');
    if (!this.runControllers) {
      this.logger.info('controllers off (ROLLPLANE_CONTROLLERS=off): serving the API only');
      return;
    }
    if (this.leadOnDemand) return;
    if (!this.settings.enabled) {
      await this.startControllers();
      return;
    }
    await this.ensureNamespace(this.settings.namespace);
    this.elector = new LeaderElector({
      coordination: this.clients.coordination,
      namespace: this.settings.namespace,
      name: this.settings.name,
      identity: this.identity,
      leaseDurationMs: this.settings.leaseDurationMs,
      renewDeadlineMs: this.settings.renewDeadlineMs,
      retryPeriodMs: this.settings.retryPeriodMs,
      registry: this.registry,
      onStartedLeading: () => this.startControllers(),
      onStoppedLeading: () => this.stopControllers(),
      onNewLeader: (identity) => this.logger.info({ leader: identity }, 'leader observed'),
      onError: (error) => this.logger.warn({ err: error }, 'leader election error'),
      ...(this.canLead && { canLead: this.canLead }),
    });
    this.elector.start();
  }

  /**
   * A Manager with `leadOnDemand`: starts its controllers (after the onStartedLeading listeners), once its caches have
   * synced; false (nothing started) before that.
   */
  async lead(): Promise<boolean> {
    if (!this.leadOnDemand || !this.synced || !this.runControllers) return false;
    if (!this.leading) await this.startControllers();
    return this.leading;
  }

  /** A Manager with `leadOnDemand`: stops its controllers, draining in-flight reconciles, then the onStoppedLeading listeners. */
  async unlead(): Promise<void> {
    if (this.leadOnDemand && this.leading) await this.stopControllers();
  }

  private async startControllers(): Promise<void> {
    this.leading = true;
    // Listeners run in order, each awaited; the controllers never start before they are all done (state a listener
    // reloads is what the controllers work from).
    for (const listener of this.leadingListeners) {
      await listener();
      if (!this.leading) return; // lost the lease meanwhile
    }
    for (const controller of this.controllers) controller.start();
    this.logger.info({ identity: this.identity, controllers: this.controllers.map((c) => c.name) }, 'leading: controllers started');
  }

  private async stopControllers(): Promise<void> {
    this.leading = false;
    await Promise.all(this.controllers.map((c) => c.stop()));
    this.logger.info({ identity: this.identity }, 'not leading: controllers stopped');
    await this.stoppedLeading();
  }

  /** Stops controllers (draining in-flight reconciles), releases the lease, stops informers. */
  async stop(): Promise<void> {
    if (this.elector) await this.elector.stop();
    else if (this.leading) {
      this.leading = false;
      await Promise.all(this.controllers.map((c) => c.stop()));
      await this.stoppedLeading();
    }
    await Promise.all(this.informers.map((i) => i.stop()));
    this.started = false;
    this.synced = false;
  }

  private async stoppedLeading(): Promise<void> {
    for (const listener of this.stoppedListeners) {
      try {
        await listener();
      } catch (error) {
        this.logger.warn({ err: error }, 'a listener of the end of leadership failed');
      }
    }
  }

  private async ensureNamespace(name: string): Promise<void> {
    try {
      await this.clients.core.createNamespace({ body: { metadata: { name } } });
    } catch (error) {
      const translated = translateKubeError(error);
      if (!(translated instanceof ConflictError)) {
        // Without RBAC to create namespaces the namespace must already exist; the Lease calls will say so if not.
        this.logger.debug({ err: translated, namespace: name }, 'could not create the leader election namespace');
      }
    }
  }
}
