import type { Reconciler } from '../../controller/Controller.js';
import { EventType } from '../../domain/events.js';
import type { ControllerHost } from '../host.js';
import type { AgentPoolDriver } from './AgentPoolDriver.js';
import type { VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';

export interface ControllerImageReconcilerDeps {
  watch: VmDhcpControllerWatch;
  driver: Pick<AgentPoolDriver, 'takeOwnImageChange'>;
  host: Pick<ControllerHost, 'events' | 'logger'>;
}

/**
 * Records each change of the vm-dhcp-controller's `--image` once (an UpstreamControllerChanged event). Runs on the
 * leader only, like every controller, so replicas do not record one change twice. The first image seen after start is
 * the baseline, not a change.
 */
export class ControllerImageReconciler implements Reconciler {
  private lastImage: string | undefined;

  constructor(private readonly deps: ControllerImageReconcilerDeps) {}

  async reconcile(): Promise<void> {
    const state = this.deps.watch.state();
    if (state.kind !== 'agents') return;
    const previous = this.lastImage;
    this.lastImage = state.image;
    if (previous === undefined || previous === state.image) return;
    const planned = this.deps.driver.takeOwnImageChange(state.image);
    await this.deps.host.events.append({
      type: EventType.UpstreamControllerChanged,
      kind: 'AGENT_POOL',
      namespace: state.ref.slice(0, state.ref.indexOf('/')),
      name: state.ref.slice(state.ref.indexOf('/') + 1),
      payload: { controller: state.ref, oldImage: previous, newImage: state.image, planned },
    });
    if (!planned)
      this.deps.host.logger.warn(
        { controller: state.ref, oldImage: previous, newImage: state.image },
        'the vm-dhcp-controller --image was changed outside rollplane',
      );
  }
}
