/**
 * Whether the CAPN vc-manager beside rollplane upgrades virtual clusters itself: its Deployment (all_in_one.yaml:
 * `vc-manager/vc-manager`, configurable) runs with `--feature-gates=ClusterVersionPartialUpgrade=true`. Then it acts
 * on the same `tenancy.x-k8s.io/ready-for-upgrade` label as rollplane's VirtualClusterReconciler, and both would upgrade
 * the same cluster (ADR 0018): rollplane leaves labelled clusters to it and refuses to start VIRTUAL_CLUSTER rollouts.
 * Read from an informer on the Deployment's namespace, so deciding costs no API call.
 */
import type { V1Deployment } from '@kubernetes/client-node';
import type { Informer } from '../../controller/Informer.js';

export const PARTIAL_UPGRADE_GATE = 'ClusterVersionPartialUpgrade';

export interface VcManagerRef {
  namespace: string;
  name: string;
}

export interface VcManagerState {
  /** `namespace/name` of the Deployment. */
  deployment: string;
  /** The gate as its args set it (upstream's default: off). */
  partialUpgrade: boolean;
}

/** The value of `--feature-gates` (`--feature-gates=A=true,B=false`, or as two args) for `gate`: upstream's default false. */
export function gateFromArgs(args: readonly string[], gate = PARTIAL_UPGRADE_GATE): boolean {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const match = /^--?feature-gates(?:=(.*))?$/.exec(arg);
    if (!match) continue;
    value = match[1] ?? args[i + 1] ?? ''; // the last occurrence wins, as with Go's flag package
  }
  for (const pair of (value ?? '').split(',')) {
    const [key, setting] = pair.split('=');
    if (key?.trim() === gate) return (setting ?? '').trim().toLowerCase() === 'true';
  }
  return false;
}

/** The vc-manager's container args: the container named `vc-manager` (all_in_one.yaml), else the first. */
function managerArgs(deployment: V1Deployment): string[] {
  const containers = deployment.spec?.template?.spec?.containers ?? [];
  const container = containers.find((c) => c.name === 'vc-manager') ?? containers[0];
  return [...(container?.command?.slice(1) ?? []), ...(container?.args ?? [])];
}

export class VcManagerGate {
  constructor(
    private readonly ref: VcManagerRef | null,
    private readonly deployments: Informer<V1Deployment> | undefined,
  ) {}

  /** The vc-manager, when its Deployment exists and runs (replicas ≠ 0); undefined otherwise. */
  state(): VcManagerState | undefined {
    if (!this.ref || !this.deployments) return undefined;
    const deployment = this.deployments.get(this.ref.namespace, this.ref.name);
    if (!deployment || deployment.metadata?.deletionTimestamp || deployment.spec?.replicas === 0) return undefined;
    return { deployment: `${this.ref.namespace}/${this.ref.name}`, partialUpgrade: gateFromArgs(managerArgs(deployment)) };
  }

  /** Why rollplane must not upgrade clusters now (the vc-manager does it), or undefined when it may. */
  upstreamUpgrades(): string | undefined {
    // Not known yet (the cache is still listing): assume the worst rather than race an upstream controller.
    if (this.ref && this.deployments && !this.deployments.hasSynced()) {
      return `the vc-manager Deployment ${this.ref.namespace}/${this.ref.name} has not been read yet; try again in a moment`;
    }
    const state = this.state();
    if (!state?.partialUpgrade) return undefined;
    return (
      `the vc-manager Deployment ${state.deployment} runs with --feature-gates=${PARTIAL_UPGRADE_GATE}=true: it upgrades every VirtualCluster ` +
      `labelled tenancy.x-k8s.io/ready-for-upgrade itself, so rollplane would upgrade the same clusters twice; ` +
      `turn the gate off in that Deployment (upstream's default) to upgrade through rollplane, or upgrade by hand through the vc-manager`
    );
  }
}
