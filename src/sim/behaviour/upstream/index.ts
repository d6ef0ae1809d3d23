/**
 * Upstream controllers as simulated behaviours (see docs/adr/0015-upstream-controllers-in-the-simulator.md). Each
 * runs only while its own Deployment is in the cluster, configured by that Deployment's args, so installing,
 * reconfiguring ("helm upgrade") or removing one is an ordinary API write.
 */
import type { Controller } from '../ControllerRuntime.js';
import type { BehaviourContext } from '../context.js';
import { VcManager, VC_MANAGER_TIMING, type VcManagerTiming } from './VcManager.js';
import { VmDhcpController, VM_DHCP_TIMING, type VmDhcpTiming } from './VmDhcpController.js';
import { VmDhcpWebhook } from './VmDhcpWebhook.js';
import { HarvesterAddons } from './HarvesterAddons.js';

export { parseUpstreamSpec, mergeSelections, isEmptySelection, UPSTREAM_TOKENS, type UpstreamSelection } from './selection.js';
export { VM_DHCP_TIMING, type VmDhcpTiming } from './VmDhcpController.js';
export { VC_MANAGER_TIMING, READY_FOR_UPGRADE, CLUSTER_VERSION_APPLIED, type VcManagerTiming } from './VcManager.js';

export interface UpstreamTiming {
  vmDhcp?: Partial<VmDhcpTiming>;
  vcManager?: Partial<VcManagerTiming>;
}

export function upstreamControllers(ctx: BehaviourContext, timing: UpstreamTiming = {}): Controller[] {
  return [
    new VmDhcpController(ctx, { ...VM_DHCP_TIMING, ...timing.vmDhcp }),
    new VmDhcpWebhook(ctx),
    new HarvesterAddons(ctx),
    new VcManager(ctx, { ...VC_MANAGER_TIMING, ...timing.vcManager }),
  ];
}
