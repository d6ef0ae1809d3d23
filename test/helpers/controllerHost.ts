import { type LeaderElectionSettings, Manager, type ManagerOptions } from '../../src/controller/Manager.js';
import { RolloutControllerHost, type RolloutControllerHostOptions } from '../../src/controllers/RolloutControllerHost.js';

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
