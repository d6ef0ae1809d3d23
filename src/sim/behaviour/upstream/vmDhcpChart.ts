/**
 * harvester/vm-dhcp-controller as its Helm chart installs it and as its agent Pods look, after upstream
 * `chart/templates/{deployment,serviceaccount,_helpers}.tpl`, `chart/values.yaml`, `cmd/controller/root.go`,
 * `pkg/controller/ippool/common.go` and `pkg/util/common.go` (commit c3042d6), and the published chart in
 * harvester/charts (`charts/harvester-vm-dhcp-controller`, appVersion v0.3.x). Pure builders and parsers.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../types.js';

export const VM_DHCP_NAMESPACE = 'harvester-system';
/** Harvester installs the chart as the add-on `harvester-vm-dhcp-controller`, which becomes the Helm release name. */
export const VM_DHCP_RELEASE = 'harvester-vm-dhcp-controller';
export const VM_DHCP_CHART = 'harvester-vm-dhcp-controller';
export const VM_DHCP_CHART_VERSION = '0.3.0';
export const VM_DHCP_APP_VERSION = 'v0.3.0';
export const VM_DHCP_CONTROLLER_IMAGE = `rancher/harvester-vm-dhcp-controller:${VM_DHCP_APP_VERSION}`;
export const VM_DHCP_AGENT_IMAGE = `rancher/harvester-vm-dhcp-agent:${VM_DHCP_APP_VERSION}`;

export const AGENT_LABEL = 'network.harvesterhci.io/vm-dhcp-controller';
export const POOL_NAMESPACE_LABEL = 'network.harvesterhci.io/ippool-namespace';
export const POOL_NAME_LABEL = 'network.harvesterhci.io/ippool-name';
export const CLUSTER_NETWORK_LABEL = 'network.harvesterhci.io/clusternetwork';
export const HOLD_ANNOTATION = 'network.harvesterhci.io/hold-ippool-agent-upgrade';
export const MULTUS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks';
/** wrangler's OnRemove handler keeps this finalizer on every IPPool it has seen (`wrangler.cattle.io/<controller name>`). */
export const IPPOOL_FINALIZER = 'wrangler.cattle.io/vm-dhcp-ippool-controller';

/** Helm's `harvester-vm-dhcp-controller.fullname`: the release name alone when it contains the chart name. */
export function helmFullname(release: string, chart = VM_DHCP_CHART): string {
  const name = release.includes(chart) ? release : `${release}-${chart}`;
  return name.slice(0, 63).replace(/-+$/, '');
}

/** The chart's common labels (`harvester-vm-dhcp-controller.labels`). */
export function chartLabels(release = VM_DHCP_RELEASE): Record<string, string> {
  return {
    'helm.sh/chart': `${VM_DHCP_CHART}-${VM_DHCP_CHART_VERSION}`,
    'app.kubernetes.io/name': VM_DHCP_CHART,
    'app.kubernetes.io/instance': release,
    'app.kubernetes.io/version': VM_DHCP_APP_VERSION,
    'app.kubernetes.io/managed-by': 'Helm',
    'app.kubernetes.io/component': 'controller',
  };
}

/** True for the controller Deployment the chart installs (not its webhook). */
export function isVmDhcpControllerDeployment(obj: KubeObject): boolean {
  const labels = obj.metadata.labels ?? {};
  return labels['app.kubernetes.io/name'] === VM_DHCP_CHART && labels['app.kubernetes.io/component'] === 'controller';
}

/** The ServiceAccounts the chart creates: `<fullname>`, `<fullname>-agent`, `<fullname>-webhook`. */
export function vmDhcpServiceAccounts(release = VM_DHCP_RELEASE, namespace = VM_DHCP_NAMESPACE): KubeObject[] {
  const fullname = helmFullname(release);
  return ['', '-agent', '-webhook'].map((suffix) => ({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: `${fullname}${suffix}`, namespace, labels: chartLabels(release) },
    automountServiceAccountToken: true,
  }));
}

/** The controller Deployment of `chart/templates/deployment.yaml` with the default values. */
export function vmDhcpControllerDeployment(options: { release?: string; namespace?: string; agentImage?: string; noAgent?: boolean } = {}): KubeObject {
  const release = options.release ?? VM_DHCP_RELEASE;
  const namespace = options.namespace ?? VM_DHCP_NAMESPACE;
  const fullname = helmFullname(release);
  const labels = chartLabels(release);
  const selector = { 'app.kubernetes.io/name': VM_DHCP_CHART, 'app.kubernetes.io/instance': release };
  const args = [
    '--name',
    fullname,
    '--namespace',
    namespace,
    '--image',
    options.agentImage ?? VM_DHCP_AGENT_IMAGE,
    '--service-account-name',
    `${fullname}-agent`,
  ];
  // Not a chart value: an operator adds it by editing the Deployment (the flag exists in cmd/controller/root.go).
  if (options.noAgent) args.push('--no-agent');
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: fullname, namespace, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: fullname,
          securityContext: {},
          containers: [
            {
              name: VM_DHCP_CHART,
              args,
              ports: [{ name: 'metrics', protocol: 'TCP', containerPort: 8080 }],
              securityContext: {},
              image: VM_DHCP_CONTROLLER_IMAGE,
              imagePullPolicy: 'IfNotPresent',
              resources: {},
            },
          ],
        },
      },
    },
  };
}

/** The controller's options as cobra parses its container args (cmd/controller/root.go). */
export interface VmDhcpOptions {
  agentNamespace: string;
  /** `repository:tag` as upstream's config.Image prints it. */
  agentImage: string;
  agentServiceAccountName: string;
  noAgent: boolean;
  noDHCP: boolean;
}

/** Parses `--flag value`, `--flag=value` and boolean flags; an unparsable `--image` is an error, as upstream exits 1. */
export function parseControllerArgs(args: readonly string[], env: Record<string, string> = {}): VmDhcpOptions | Error {
  const values = new Map<string, string>();
  const bools = new Set(['no-agent', 'no-dhcp', 'no-leader-election', 'enable-cache-dump-api', 'debug', 'trace']);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) continue;
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    if (eq >= 0) values.set(name, arg.slice(eq + 1));
    else if (bools.has(name)) values.set(name, 'true');
    else values.set(name, args[++i] ?? '');
  }
  const image = parseImageNameAndTag(values.get('image') ?? env.AGENT_IMAGE ?? '');
  if (image instanceof Error) return image;
  return {
    agentNamespace: values.get('namespace') ?? env.AGENT_NAMESPACE ?? '',
    agentImage: image,
    agentServiceAccountName: values.get('service-account-name') ?? env.AGENT_SERVICE_ACCOUNT_NAME ?? '',
    noAgent: values.get('no-agent') === 'true',
    noDHCP: values.get('no-dhcp') === 'true',
  };
}

/**
 * Upstream `parseImageNameAndTag`: split at the last `:`; no `:`, or a `:` before the last `/` (a registry port) →
 * tag `latest`; a trailing `:` or more than two `:` is an error. Returns the image as upstream re-prints it.
 */
export function parseImageNameAndTag(image: string): string | Error {
  const idx = image.lastIndexOf(':');
  if (idx === -1) return `${image}:latest`;
  if (idx === image.length - 1) return new Error('invalid image name: colon without tag');
  if (image.split(':').length - 1 > 2) return new Error('invalid image name: multiple colons found');
  if (idx <= image.lastIndexOf('/')) return `${image}:latest`;
  return `${image.slice(0, idx)}:${image.slice(idx + 1)}`;
}

/** `util.SafeAgentConcatName(namespace, name)`. */
export function safeAgentName(poolNamespace: string, poolName: string): string {
  const full = `${poolNamespace}-${poolName}`;
  if (full.length < 58) return `${full}-agent`;
  const digest = createHash('sha256').update(full).digest('hex');
  const c = full[50]!;
  if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return `${full.slice(0, 51)}-${digest.slice(0, 5)}-agent`;
  return `${full.slice(0, 50)}-${digest.slice(0, 6)}-agent`;
}

/** `kv.RSplit(s, "/")`: everything before the last `/`, and after it (no `/`: namespace ""). */
export function rsplit(text: string): [string, string] {
  const i = text.lastIndexOf('/');
  return i < 0 ? ['', text] : [text.slice(0, i), text.slice(i + 1)];
}

/** The agent Pod `prepareAgentPod` builds (no status: the API server and kubelet fill it in). */
export function agentPodFor(pool: KubeObject, options: VmDhcpOptions, clusterNetwork: string): KubeObject {
  const name = safeAgentName(pool.metadata.namespace ?? '', pool.metadata.name);
  const [nadNamespace, nadName] = rsplit(String(pool.spec?.networkName ?? ''));
  const prefix = Number(String(pool.spec?.ipv4Config?.cidr ?? '').split('/')[1] ?? 32);
  const serverIP = pool.spec?.ipv4Config?.serverIP ?? '';
  const args = ['--ippool-ref', `${pool.metadata.namespace}/${pool.metadata.name}`];
  if (options.noDHCP) args.push('--dry-run');
  const securityContext = { runAsUser: 0, runAsGroup: 0, capabilities: { add: ['NET_ADMIN'] } };
  const probe = (path: string) => ({ httpGet: { path, port: 8080 } });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: options.agentNamespace,
      labels: { [AGENT_LABEL]: 'agent', [POOL_NAMESPACE_LABEL]: pool.metadata.namespace ?? '', [POOL_NAME_LABEL]: pool.metadata.name },
      annotations: { [MULTUS_ANNOTATION]: JSON.stringify([{ namespace: nadNamespace, name: nadName, interface: 'eth1' }]) },
    },
    spec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: `network.harvesterhci.io/${clusterNetwork}`, operator: 'In', values: ['true'] }] }],
          },
        },
      },
      serviceAccountName: options.agentServiceAccountName,
      initContainers: [
        {
          name: 'ip-setter',
          image: options.agentImage,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sh', '-c', `\n#!/usr/bin/env sh\nset -ex\n\nip address flush dev eth1\nip address add ${serverIP}/${prefix} dev eth1\n`],
          securityContext,
        },
      ],
      containers: [
        {
          name: 'agent',
          image: options.agentImage,
          args,
          env: [{ name: 'VM_DHCP_AGENT_NAME', value: name }],
          securityContext,
          livenessProbe: probe('/healthz'),
          readinessProbe: probe('/readyz'),
        },
      ],
    },
  };
}
