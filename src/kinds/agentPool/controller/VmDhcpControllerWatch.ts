import { PatchStrategy, setHeaderOptions, type V1Container, type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import type { CacheReader, Informer } from '../../../controller/Informer.js';
import { ConflictError } from '../../../errors.js';
import { kubeCall, type KubeClients } from '../../../kube/index.js';

/**
 * The harvester/vm-dhcp-controller Deployment as rollplane sees it, and the one write rollplane makes to it (its
 * `--image` argument). Upstream's controller takes its agent image only from that argument (cmd/controller/root.go),
 * writes it into every unheld pool's `status.agentPodRef.image` and replaces every agent whose image differs; so a
 * change of the argument is how agent images change beside it (docs/adr/0017).
 */

/** The chart's labels on its controller Deployment (chart/templates/_helpers.tpl, component `controller`). */
export const CHART_NAME_LABEL = 'app.kubernetes.io/name';
export const CHART_NAME = 'harvester-vm-dhcp-controller';
export const CHART_COMPONENT_LABEL = 'app.kubernetes.io/component';
export const CONTROLLER_SELECTOR = `${CHART_NAME_LABEL}=${CHART_NAME},${CHART_COMPONENT_LABEL}=controller`;

/** What the controller does about agents, as its Deployment says. */
export type VmDhcpControllerState =
  | { kind: 'absent'; detail: string }
  /** Installed with `--no-agent` (or scaled to 0): it deploys and replaces no agent. */
  | { kind: 'no-agent'; ref: string; detail: string }
  /**
   * It deploys agents with `image` and replaces any whose image differs. `version`: its release, the tag of its own
   * image (`rancher/harvester-vm-dhcp-controller:v0.3.0`), when it has one.
   */
  | { kind: 'agents'; ref: string; image: string; container: string; agentNamespace?: string; version?: string }
  /** Found but not usable for coexistence (several candidates, no `--image` argument). */
  | { kind: 'unusable'; ref: string; detail: string };

interface ImageArg {
  containerIndex: number;
  argIndex: number;
  /** `--image value` (the value is at argIndex) or `--image=value` (the whole arg is at argIndex). */
  inline: boolean;
  value: string;
}

export class VmDhcpControllerWatch {
  constructor(
    private readonly deployments: Informer<V1Deployment>,
    /** Configured `namespace/name`; undefined: the one Deployment carrying the chart's labels. */
    private readonly configured?: { namespace: string; name: string },
    /** Pods (any namespace; those of the controller Deployment are picked by its selector): for `rolledOut`. */
    private readonly pods?: CacheReader<V1Pod>,
  ) {}

  /**
   * Whether the controller's own rolling update to `--image image` is over: the Deployment has seen its spec, and every
   * pod of it (terminating ones too) runs that `--image`, one of them Ready. Until then the old pod may still hold the
   * leader lease and reconcile with the old image (wrangler's leader election hands over only when it stops).
   * Undefined when it cannot tell (no pod cache, or none of its pods in it).
   */
  rolledOut(image: string): boolean | undefined {
    const deployment = this.deployment();
    if (!deployment || !this.pods) return undefined;
    if ((deployment.status?.observedGeneration ?? 0) < (deployment.metadata?.generation ?? 0)) return false;
    const selector = deployment.spec?.selector?.matchLabels ?? {};
    const mine = this.pods
      .list()
      .filter(
        (pod) => pod.metadata?.namespace === deployment.metadata?.namespace && Object.entries(selector).every(([k, v]) => pod.metadata?.labels?.[k] === v),
      );
    const wanted = normalizeImage(image);
    const runs = (pod: V1Pod) => {
      const arg = imageArg(pod.spec?.containers ?? []);
      return arg !== undefined && normalizeImage(arg.value) === wanted;
    };
    const ready = (pod: V1Pod) => !pod.metadata?.deletionTimestamp && (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    // No pod seen (a configured Deployment without the chart's labels, which the pod cache keeps): cannot tell.
    if (mine.length === 0) return undefined;
    return mine.every(runs) && mine.some(ready);
  }

  deployment(): V1Deployment | undefined {
    if (this.configured) return this.deployments.get(this.configured.namespace, this.configured.name);
    const found = this.candidates();
    return found.length === 1 ? found[0] : undefined;
  }

  state(): VmDhcpControllerState {
    if (!this.configured) {
      const found = this.candidates();
      if (found.length > 1)
        return {
          kind: 'unusable',
          ref: found.map(refOf).join(', '),
          detail: `${found.length} vm-dhcp-controller Deployments found by the chart's labels; set ROLLPLANE_VMDHCP_CONTROLLER to the one to use`,
        };
    }
    const deployment = this.deployment();
    if (!deployment || deployment.metadata?.deletionTimestamp) {
      return {
        kind: 'absent',
        detail: this.configured ? `Deployment ${this.configured.namespace}/${this.configured.name} not found` : `no Deployment labelled ${CONTROLLER_SELECTOR}`,
      };
    }
    const ref = refOf(deployment);
    const containers = deployment.spec?.template?.spec?.containers ?? [];
    if (deployment.spec?.replicas === 0) return { kind: 'no-agent', ref, detail: `${ref} is scaled to 0` };
    if (containers.some((c) => hasFlag(c, 'no-agent'))) return { kind: 'no-agent', ref, detail: `${ref} runs with --no-agent` };
    const arg = imageArg(containers);
    if (!arg) return { kind: 'unusable', ref, detail: `${ref} has no --image argument` };
    const agentNamespace = flagValue(containers[arg.containerIndex]!, 'namespace');
    const version = tagOf(containers[arg.containerIndex]!.image ?? '');
    return {
      kind: 'agents',
      ref,
      image: normalizeImage(arg.value),
      container: containers[arg.containerIndex]!.name,
      ...(agentNamespace ? { agentNamespace } : {}),
      ...(version ? { version } : {}),
    };
  }

  /**
   * Sets the controller's `--image` (a JSON patch that first tests the old value, so a concurrent `helm upgrade` makes
   * it fail with a conflict instead of being overwritten). Upstream restarts with the new image and re-syncs every pool.
   * `fresh`: the Deployment as just read; the write then lands only on that version of it (its resourceVersion is the
   * precondition), so a write whose answer was lost can be fenced off (ImageWriteFence.ts). `also`: more operations of
   * the same patch (the marker naming the rollout, imageWriteMarker.ts).
   */
  async setImage(clients: KubeClients, image: string, options: { dryRun?: boolean; fresh?: V1Deployment; also?: readonly object[] } = {}): Promise<void> {
    const deployment = options.fresh ?? this.deployment();
    if (!deployment) throw new ConflictError('the vm-dhcp-controller Deployment is gone');
    const arg = imageArg(deployment.spec?.template?.spec?.containers ?? []);
    if (!arg) throw new ConflictError(`${refOf(deployment)} has no --image argument`);
    if (normalizeImage(arg.value) === normalizeImage(image)) return;
    const path = `/spec/template/spec/containers/${arg.containerIndex}/args/${arg.argIndex}`;
    const old = arg.inline ? `--image=${arg.value}` : arg.value;
    const value = arg.inline ? `--image=${image}` : image;
    const precondition = options.fresh?.metadata?.resourceVersion
      ? [{ op: 'replace', path: '/metadata/resourceVersion', value: options.fresh.metadata.resourceVersion }]
      : [];
    await kubeCall(`set --image of ${refOf(deployment)}`, () =>
      clients.apps.patchNamespacedDeployment(
        {
          namespace: deployment.metadata!.namespace!,
          name: deployment.metadata!.name!,
          // A dry run asks only whether the change would be admitted: no test of a value the cache may not show yet.
          body: options.dryRun
            ? [{ op: 'replace', path, value }]
            : [...precondition, { op: 'test', path, value: old }, { op: 'replace', path, value }, ...(options.also ?? [])],
          ...(options.dryRun ? { dryRun: 'All' } : {}),
        },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      ),
    );
  }

  private candidates(): V1Deployment[] {
    return this.deployments.list().filter((d) => {
      const labels = d.metadata?.labels ?? {};
      return labels[CHART_NAME_LABEL] === CHART_NAME && labels[CHART_COMPONENT_LABEL] === 'controller';
    });
  }
}

function refOf(deployment: V1Deployment): string {
  return `${deployment.metadata?.namespace}/${deployment.metadata?.name}`;
}

function hasFlag(container: V1Container, flag: string): boolean {
  return (container.args ?? []).some((a) => a === `--${flag}` || a === `--${flag}=true`);
}

/** `--flag value` or `--flag=value`. */
function flagValue(container: V1Container, flag: string): string | undefined {
  const args = container.args ?? [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${flag}` && i + 1 < args.length) return args[i + 1];
    if (args[i]!.startsWith(`--${flag}=`)) return args[i]!.slice(flag.length + 3);
  }
  return undefined;
}

/** The `--image` a Deployment's pod template runs the controller with (normalized); undefined when it has none. */
export function deploymentImage(deployment: V1Deployment): string | undefined {
  const arg = imageArg(deployment.spec?.template?.spec?.containers ?? []);
  return arg ? normalizeImage(arg.value) : undefined;
}

function imageArg(containers: V1Container[]): ImageArg | undefined {
  for (let c = 0; c < containers.length; c++) {
    const args = containers[c]!.args ?? [];
    for (let i = 0; i < args.length; i++) {
      if (args[i] === '--image' && i + 1 < args.length) return { containerIndex: c, argIndex: i + 1, inline: false, value: args[i + 1]! };
      if (args[i]!.startsWith('--image=')) return { containerIndex: c, argIndex: i, inline: true, value: args[i]!.slice('--image='.length) };
    }
  }
  return undefined;
}

/** An image's tag (after the last `:` that follows the last `/`); undefined when it has none. */
function tagOf(image: string): string | undefined {
  const colon = image.lastIndexOf(':');
  return colon > image.lastIndexOf('/') ? image.slice(colon + 1) : undefined;
}

/** As upstream prints a parsed image: no tag (and no tag after a registry port) means `:latest`. */
export function normalizeImage(image: string): string {
  const colon = image.lastIndexOf(':');
  return colon < 0 || colon < image.lastIndexOf('/') ? `${image}:latest` : image;
}
