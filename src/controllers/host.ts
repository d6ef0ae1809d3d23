import type { KubernetesObject } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { Controller, ControllerOptions } from '../controller/Controller.js';
import type { Informer, InformerOptions } from '../controller/Informer.js';
import type { EventLog } from '../domain/EventLog.js';
import type { InFlightChanges } from '../domain/InFlightChanges.js';
import type { RolloutKind } from '../domain/events.js';
import type { RolloutService } from '../domain/RolloutService.js';
import type { KubeClients } from '../kube/index.js';
import type { Logger } from '../log.js';

/**
 * What a rollout kind's controllers get from the composition root. Informers registered here start (and sync) before
 * any controller; controllers run only while this replica holds the leader lease and stop at once when it loses it.
 */
export interface ControllerHost {
  /**
   * The member cluster these controllers drive (ADR 0055); absent: `local`. The events they record and their in-flight
   * notes carry it; their target notifications reach the engine with it.
   */
  readonly cluster?: string;
  config: Config;
  clients: KubeClients;
  registry: Registry;
  logger: Logger;
  /** The history: append AgentRecreated, ClusterUpgradeObserved, NodeAgentReplaced, … events here. */
  events: EventLog;
  /** The rollouts' history, for a kind whose query port shows what rollouts decided (agent pools); absent in rigs. */
  rollouts?: Pick<RolloutService, 'list' | 'allTargets' | 'get'>;
  /** Durable notes of work in flight that completes together with its history event (see InFlightChanges). */
  inFlight: InFlightChanges;
  /**
   * The informer of a collection (client-node list + watch with restart, and a cache), shared with every other caller
   * of the same path and selectors; `informer.view()` narrows it without a second watch.
   */
  informer<T extends KubernetesObject>(options: Omit<InformerOptions<T>, 'watch'>): Informer<T>;
  /** Creates and registers a controller (workers on a work queue). */
  controller(options: Omit<ControllerOptions, 'registry' | 'logger'>): Controller;
  /** Tells the rollout engine that a target changed, so the rollout that owns it is re-evaluated promptly. */
  notifyTargetChanged(kind: RolloutKind, namespace: string, name: string): void;
}
