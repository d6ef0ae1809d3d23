import { AppError, ErrorCode } from '../../../errors.js';
import { vmDhcpRelease } from '../../../util/vmDhcpRelease.js';
import type { VmDhcpControllerState } from './VmDhcpControllerWatch.js';

/** The configured way of working (ROLLPLANE_AGENT_MODE). */
export type ConfiguredAgentMode = 'auto' | 'coexist' | 'direct';
/** How a rollout actually works: beside the upstream controller, or with rollplane recreating agents itself. */
export type AgentMode = 'coexist' | 'direct';

/** The error code and reason of every refusal here: the contract a client can match on. */
export const AGENT_MODE_MISMATCH = 'AGENT_MODE_MISMATCH';
/** The controller's release cannot run a coexistence rollout (before v0.3.0: no hold, running agents never replaced). */
export const CONTROLLER_UNSUPPORTED = 'CONTROLLER_UNSUPPORTED';

/**
 * Who deploys and replaces agents right now: upstream when its controller runs with agents (or cannot be read well
 * enough to be sure it does not), rollplane only when no controller deploys them.
 */
export function agentsManagedBy(state: VmDhcpControllerState): 'upstream' | 'rollplane' {
  return state.kind === 'absent' || state.kind === 'no-agent' ? 'rollplane' : 'upstream';
}

/**
 * The mode a rollout may run in, or why none: direct beside a controller that deploys agents would have both delete
 * each other's agents; coexistence without one has no `--image` to change. Refusals are CONFLICT (the cluster, not the
 * request, is in the way) with `reason: AGENT_MODE_MISMATCH`.
 */
export function resolveAgentMode(configured: ConfiguredAgentMode, state: VmDhcpControllerState, agentNamespace?: string): AgentMode | AppError {
  switch (state.kind) {
    case 'agents':
      // rollplane watches agents in its own agent namespace: elsewhere it could not see upstream replace them.
      if (agentNamespace !== undefined && state.agentNamespace !== undefined && state.agentNamespace !== agentNamespace) {
        return refusal(
          `the vm-dhcp-controller ${state.ref} runs its agents in namespace ${state.agentNamespace}, rollplane watches ${agentNamespace}: set ROLLPLANE_AGENT_NAMESPACE=${state.agentNamespace}`,
          state,
        );
      }
      if (!vmDhcpRelease(state.version).hasHold) {
        return refusal(
          `the vm-dhcp-controller ${state.ref} runs ${state.version}: releases before v0.3.0 have no hold annotation and never replace a running agent, so a rollout beside it could never finish; upgrade the controller to v0.3.0 or later, or run it with --no-agent to let rollplane manage agents directly`,
          state,
          CONTROLLER_UNSUPPORTED,
        );
      }
      if (configured === 'direct') {
        return refusal(
          `ROLLPLANE_AGENT_MODE=direct, but the vm-dhcp-controller ${state.ref} deploys agents (--image ${state.image}): rollplane and it would delete each other's agents; use coexist or auto, or run the controller with --no-agent`,
          state,
        );
      }
      return 'coexist';
    case 'unusable':
      return refusal(`the vm-dhcp-controller cannot be used for agent rollouts: ${state.detail}`, state);
    case 'absent':
    case 'no-agent':
      if (configured === 'coexist') {
        return refusal(`ROLLPLANE_AGENT_MODE=coexist needs a vm-dhcp-controller that deploys agents, but ${state.detail}; use direct or auto`, state);
      }
      return 'direct';
  }
}

function refusal(message: string, state: VmDhcpControllerState, reason = AGENT_MODE_MISMATCH): AppError {
  return new AppError(ErrorCode.Conflict, message, {
    details: { reason, controller: state.kind === 'absent' ? null : state.ref, controllerState: state.kind },
  });
}
