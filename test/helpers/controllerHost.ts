import { Manager, type ManagerOptions } from '../../src/controller/Manager.js';
import { RolloutControllerHost, type RolloutControllerHostOptions } from '../../src/controllers/RolloutControllerHost.js';

/**
 * A rollout-kind ControllerHost over its own generic Manager, as the composition root builds them, that the test
 * starts and stops as one piece.
 */
export class TestControllerHost extends RolloutControllerHost {
  override readonly manager: Manager;

  constructor(options: Omit<RolloutControllerHostOptions, 'manager'> & Omit<ManagerOptions, 'clients'>) {
    const manager = new Manager(options);
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
