import type { KubernetesObject } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { Controller, ControllerOptions } from '../controller/Controller.js';
import type { Informer, InformerOptions } from '../controller/Informer.js';
import type { Manager } from '../controller/Manager.js';
import type { QueueSnapshot } from '../domain/Domain.js';
import type { EventLog } from '../domain/EventLog.js';
import type { InFlightChanges } from '../domain/InFlightChanges.js';
import type { RolloutKind } from '../domain/events.js';
import type { RolloutService } from '../domain/RolloutService.js';
import type { KubeClients } from '../kube/index.js';
import type { Logger } from '../log.js';
import type { ControllerHost } from './host.js';
import { registerRuntimeMetrics } from './runtimeMetrics.js';

export interface RolloutControllerHostOptions {
  /** The member cluster driven (ADR 0055); absent: `local`. */
  cluster?: string;
  config: Config;
  clients: KubeClients;
  manager: Manager;
  logger: Logger;
  events: EventLog;
  inFlight: InFlightChanges;
  rollouts?: Pick<RolloutService, 'list' | 'allTargets' | 'get'>;
}

/**
 * The ControllerHost the rollout kinds are built with: the generic Manager's informers and controllers, plus what is
 * rollplane's own (configuration, the history, in-flight changes, target-change notifications to the rollout engine,
 * and the queue snapshots the API shows).
 */
export class RolloutControllerHost implements ControllerHost {
  readonly cluster?: string;
  readonly config: Config;
  readonly clients: KubeClients;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly events: EventLog;
  readonly inFlight: InFlightChanges;
  readonly rollouts?: Pick<RolloutService, 'list' | 'allTargets' | 'get'>;
  protected readonly manager: Manager;
  private readonly targetListeners: ((kind: RolloutKind, namespace: string, name: string) => void)[] = [];

  constructor(options: RolloutControllerHostOptions) {
    if (options.cluster !== undefined) this.cluster = options.cluster;
    this.config = options.config;
    this.clients = options.clients;
    this.manager = options.manager;
    this.registry = options.manager.registry;
    this.logger = options.logger;
    this.events = options.events;
    this.inFlight = options.inFlight;
    if (options.rollouts) this.rollouts = options.rollouts;
    // Registered first so that it runs before any other leading listener, and the controllers never start without it:
    // another leader may have moved work on since this replica last led, and they would redo work already in flight.
    this.manager.onStartedLeading(() => this.inFlight.reload());
    registerRuntimeMetrics(this.registry, this.manager);
  }

  informer<T extends KubernetesObject>(options: Omit<InformerOptions<T>, 'watch'>): Informer<T> {
    return this.manager.informer(options);
  }

  controller(options: Omit<ControllerOptions, 'registry' | 'logger'>): Controller {
    return this.manager.controller(options);
  }

  notifyTargetChanged(kind: RolloutKind, namespace: string, name: string): void {
    for (const listener of this.targetListeners) listener(kind, namespace, name);
  }

  onTargetChanged(listener: (kind: RolloutKind, namespace: string, name: string) => void): void {
    this.targetListeners.push(listener);
  }

  /** The work queues as the API shows them (delayed keys count toward depth). */
  queueSnapshots(): QueueSnapshot[] {
    const leader = this.manager.isLeader();
    return this.manager.snapshots().map((s) => ({
      name: s.name,
      depth: s.depth + s.delayed,
      inFlight: s.inFlight,
      retries: Object.entries(s.retries).map(([key, retries]) => ({ key, retries, lastError: s.lastErrors[key]?.message ?? null })),
      leader,
    }));
  }
}
