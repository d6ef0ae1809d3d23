import { Registry } from 'prom-client';
import type { Config } from '../../src/config.js';
import { type LeaderElectionSettings, Manager, type ManagerOptions } from '../../src/controller/Manager.js';
import { RolloutControllerHost, type RolloutControllerHostOptions } from '../../src/controllers/RolloutControllerHost.js';
import type { EventLog } from '../../src/domain/EventLog.js';
import type { HistoryStore } from '../../src/domain/historyPort.js';
import { InFlightChanges } from '../../src/domain/InFlightChanges.js';
import { createKubeClients, type KubeClients } from '../../src/kube/index.js';
import type { Logger } from '../../src/log.js';
import type { Simulator } from '../../src/sim/index.js';

/** Leader election off, as a test's only replica runs: its controllers start with the Manager. */
export const NO_LEADER_ELECTION: LeaderElectionSettings = {
  enabled: false,
  namespace: 'rollplane-system',
  name: 'rollplane',
  leaseDurationMs: 15000,
  renewDeadlineMs: 10000,
  retryPeriodMs: 2000,
};

/**
 * A rollout-kind ControllerHost over its own generic Manager, as the composition root builds them, that the test
 * starts and stops as one piece. Leader election is off unless `leaderElection` says otherwise.
 */
export class TestControllerHost extends RolloutControllerHost {
  override readonly manager: Manager;

  constructor(
    options: Omit<RolloutControllerHostOptions, 'manager'> & Omit<ManagerOptions, 'clients' | 'leaderElection'> & { leaderElection?: LeaderElectionSettings },
  ) {
    const manager = new Manager({ ...options, leaderElection: options.leaderElection ?? NO_LEADER_ELECTION });
    super({ ...options, manager });
    this.manager = manager;
  }

  start(): Promise<void> {
    return this.manager.start();
  }

  stop(): Promise<void> {
    return this.manager.stop();
  }
}

export interface HostOverSimOptions {
  sim: Simulator;
  config: Config;
  logger: Logger;
  /** The history the controllers record into, and the store of its in-flight changes. */
  events: EventLog;
  store: HistoryStore;
  /** A fresh one unless given. */
  registry?: Registry;
  /** Client-node over HTTP to `sim`, unthrottled, unless given (a restarted host may keep its predecessor's). */
  clients?: KubeClients;
}

/** A TestControllerHost that reaches `sim` as a service does (client-node over HTTP) and records into `events`. */
export function hostOverSim(options: HostOverSimOptions): TestControllerHost {
  const registry = options.registry ?? new Registry();
  const clients = options.clients ?? createKubeClients({ mode: 'sim', kubeconfigPath: options.sim.kubeconfigPath, qps: 10_000, burst: 10_000, registry });
  const { config, logger, events } = options;
  return new TestControllerHost({ config, clients, registry, logger, events, inFlight: new InFlightChanges(options.store, events) });
}
