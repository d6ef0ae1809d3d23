/**
 * Whether the CAPN vc-manager beside rollplane upgrades virtual clusters itself: its Deployment (all_in_one.yaml:
 * `vc-manager/vc-manager`, configurable) runs with `--feature-gates=ClusterVersionPartialUpgrade=true`. Then it acts
 * on the same `tenancy.x-k8s.io/ready-for-upgrade` label as rollplane's VirtualClusterReconciler, and both would upgrade
 * the same cluster (ADR 0018): rollplane leaves labelled clusters to it and refuses to start VIRTUAL_CLUSTER rollouts.
 * Read from an informer on the Deployment's namespace, so deciding costs no API call.
 */
import type { V1Deployment } from '@kubernetes/client-node';
import type { Informer } from '../../../controller/Informer.js';
import { mapStringBool, parseGoFlags } from '../../../util/goFlags.js';

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

/**
 * Whether `--feature-gates` turns `gate` on, read as the vc-manager reads it (cmd/manager/main.go: Go's flag package
 * with component-base's MapStringBool): every occurrence of the flag adds to one map, a later pair for the same key
 * wins, and a value is any `strconv.ParseBool` spelling (`1`, `t`, `TRUE`, …). Upstream's default is off. A gate key
 * the vc-manager does not know makes it exit at start-up; rollplane still reads the gate as set (it refuses rather than
 * race a vc-manager that starts once the typo is fixed). Args that Go's flag package cannot parse leave it off.
 */
export function gateFromArgs(args: readonly string[], gate = PARTIAL_UPGRADE_GATE): boolean {
  const parsed = parseGoFlags(args, { flags: { 'feature-gates': 'value' }, unknown: 'lenient' });
  if (parsed instanceof Error) return false;
  const gates = mapStringBool(parsed.values.get('feature-gates') ?? []);
  return !(gates instanceof Error) && gates.get(gate) === true;
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

  /** `namespace/name` of the vc-manager Deployment when it exists scaled to 0 (its webhook may still be registered). */
  scaledToZero(): string | undefined {
    if (!this.ref || !this.deployments) return undefined;
    const deployment = this.deployments.get(this.ref.namespace, this.ref.name);
    return deployment && !deployment.metadata?.deletionTimestamp && deployment.spec?.replicas === 0 ? `${this.ref.namespace}/${this.ref.name}` : undefined;
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
