/**
 * harvester/vm-dhcp-controller as its Helm chart installs it and as its agent Pods look, after upstream
 * `chart/templates/{deployment,serviceaccount,_helpers}.tpl`, `chart/values.yaml`, `cmd/controller/root.go`,
 * `pkg/controller/ippool/common.go` and `pkg/util/common.go` (commit c3042d6), and the published chart in
 * harvester/charts (`charts/harvester-vm-dhcp-controller`, appVersion v0.3.x). Pure builders and parsers.
 */
import { createHash } from 'node:crypto';
import type { KubeObject, ObjectStore } from '../../types.js';
import { parseAgentImage, vmDhcpRelease } from '../../../util/vmDhcpRelease.js';

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

/** The annotations Helm puts on every object of a release (how `helm` and rollplane tell whose object it is). */
export const HELM_RELEASE_NAME = 'meta.helm.sh/release-name';
export const HELM_RELEASE_NAMESPACE = 'meta.helm.sh/release-namespace';

/** The chart's values that the simulator renders (chart/values.yaml; harvester/charts adds `serviceCIDR`). */
export interface VmDhcpChartValues {
  replicaCount: number;
  image: { repository: string; tag: string };
  agent: { image: { repository: string; tag: string } };
  webhook: { replicaCount: number; image: { repository: string; tag: string }; httpsPort: number; service: { port: number } };
  serviceCIDR: string;
}

export function defaultVmDhcpValues(): VmDhcpChartValues {
  return {
    replicaCount: 1,
    image: { repository: 'rancher/harvester-vm-dhcp-controller', tag: '' },
    agent: { image: { repository: 'rancher/harvester-vm-dhcp-agent', tag: '' } },
    webhook: { replicaCount: 1, image: { repository: 'rancher/harvester-vm-dhcp-webhook', tag: '' }, httpsPort: 8443, service: { port: 443 } },
    serviceCIDR: '10.53.0.0/16',
  };
}

/** Helm's coalescing of user values over the chart's defaults: maps merge key by key, anything else replaces. */
export function mergeValues(base: VmDhcpChartValues, overrides: unknown): VmDhcpChartValues {
  const merge = (a: unknown, b: unknown): unknown => {
    if (b === undefined || b === null) return a;
    if (typeof a === 'object' && a !== null && !Array.isArray(a) && typeof b === 'object' && !Array.isArray(b)) {
      const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
      for (const [k, v] of Object.entries(b as Record<string, unknown>)) out[k] = merge(out[k], v);
      return out;
    }
    return b;
  };
  return merge(base, overrides) as VmDhcpChartValues;
}

/** Which chart is rendered: the release, where, and the chart's version and appVersion (the images' default tag). */
export interface VmDhcpRelease {
  release?: string;
  namespace?: string;
  chartVersion?: string;
  appVersion?: string;
}

/** The chart's common labels (`harvester-vm-dhcp-controller.labels`, or `harvester-vm-dhcp-webhook.labels`). */
export function chartLabels(release = VM_DHCP_RELEASE, component: 'controller' | 'webhook' = 'controller', chart: VmDhcpRelease = {}): Record<string, string> {
  return {
    'helm.sh/chart': `${VM_DHCP_CHART}-${chart.chartVersion ?? VM_DHCP_CHART_VERSION}`,
    ...selectorLabels(release, component),
    'app.kubernetes.io/version': chart.appVersion ?? VM_DHCP_APP_VERSION,
    'app.kubernetes.io/managed-by': 'Helm',
    'app.kubernetes.io/component': component,
  };
}

function selectorLabels(release: string, component: 'controller' | 'webhook'): Record<string, string> {
  return { 'app.kubernetes.io/name': component === 'webhook' ? `${VM_DHCP_CHART}-webhook` : VM_DHCP_CHART, 'app.kubernetes.io/instance': release };
}

/** True for the controller Deployment the chart installs (not its webhook). */
export function isVmDhcpControllerDeployment(obj: KubeObject): boolean {
  const labels = obj.metadata.labels ?? {};
  return labels['app.kubernetes.io/name'] === VM_DHCP_CHART && labels['app.kubernetes.io/component'] === 'controller';
}

/** True for the webhook Deployment the chart installs. */
export function isVmDhcpWebhookDeployment(obj: KubeObject): boolean {
  const labels = obj.metadata.labels ?? {};
  return labels['app.kubernetes.io/name'] === `${VM_DHCP_CHART}-webhook` && labels['app.kubernetes.io/component'] === 'webhook';
}

/** `repository:tag`, the tag defaulting to the chart's appVersion (as the chart's templates write every image). */
function imageOf(image: { repository: string; tag: string }, appVersion: string): string {
  return `${image.repository}:${image.tag || appVersion}`;
}

/**
 * Everything `helm install` of the chart creates (chart/templates of the release branch in harvester/charts), with the
 * annotations Helm adds: ServiceAccounts `<fullname>`, `-agent`, `-webhook`; the controller and webhook Deployments and
 * their Services; the ClusterRoles, Roles and bindings of rbac.yaml (names only: the simulator does not authorize).
 * `noAgent` is not a chart value: an operator adds `--no-agent` by editing the Deployment.
 */
export function renderVmDhcpChart(chart: VmDhcpRelease & { values?: unknown; noAgent?: boolean } = {}): KubeObject[] {
  const release = chart.release ?? VM_DHCP_RELEASE;
  const namespace = chart.namespace ?? VM_DHCP_NAMESPACE;
  const appVersion = chart.appVersion ?? VM_DHCP_APP_VERSION;
  const values = mergeValues(defaultVmDhcpValues(), chart.values);
  const fullname = helmFullname(release);
  const name = VM_DHCP_CHART;
  const helm = { [HELM_RELEASE_NAME]: release, [HELM_RELEASE_NAMESPACE]: namespace };
  const labels = chartLabels(release, 'controller', chart);
  const webhookLabels = chartLabels(release, 'webhook', chart);
  const meta = (objName: string, objLabels: Record<string, string>, namespaced = true) => ({
    name: objName,
    ...(namespaced ? { namespace } : {}),
    labels: objLabels,
    annotations: { ...helm },
  });
  const serviceAccounts = ['', '-agent', '-webhook'].map((suffix) => ({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(`${fullname}${suffix}`, labels),
    automountServiceAccountToken: true,
  }));
  const args = [
    '--name',
    fullname,
    '--namespace',
    namespace,
    '--image',
    imageOf(values.agent.image, appVersion),
    '--service-account-name',
    `${fullname}-agent`,
  ];
  if (chart.noAgent) args.push('--no-agent');
  const controller: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(fullname, labels),
    spec: {
      replicas: values.replicaCount,
      selector: { matchLabels: selectorLabels(release, 'controller') },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: fullname,
          securityContext: {},
          containers: [
            {
              name,
              args,
              ports: [{ name: 'metrics', protocol: 'TCP', containerPort: 8080 }],
              securityContext: {},
              image: imageOf(values.image, appVersion),
              imagePullPolicy: 'IfNotPresent',
              resources: {},
            },
          ],
        },
      },
    },
  };
  const webhookArgs = ['--name', `${fullname}-webhook`, '--namespace', namespace, '--https-port', String(values.webhook.httpsPort)];
  // The service CIDR flag came with v0.3.1 (v0.3.0 reads every node's rke2.io/node-args instead).
  if (!isBeforeV031(appVersion)) webhookArgs.push('--service-cidr', values.serviceCIDR);
  const webhook: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(`${fullname}-webhook`, webhookLabels),
    spec: {
      replicas: values.webhook.replicaCount,
      selector: { matchLabels: selectorLabels(release, 'webhook') },
      template: {
        metadata: { labels: webhookLabels },
        spec: {
          serviceAccountName: `${fullname}-webhook`,
          securityContext: {},
          containers: [
            {
              name,
              args: webhookArgs,
              ports: [{ name: 'https', protocol: 'TCP', containerPort: values.webhook.httpsPort }],
              securityContext: {},
              image: imageOf(values.webhook.image, appVersion),
              imagePullPolicy: 'IfNotPresent',
              resources: {},
            },
          ],
        },
      },
    },
  };
  const service = (
    svcName: string,
    svcLabels: Record<string, string>,
    port: number,
    targetPort: string | number,
    portName: string,
    component: 'controller' | 'webhook',
  ) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(svcName, svcLabels),
    spec: { type: 'ClusterIP', ports: [{ port, targetPort, protocol: 'TCP', name: portName }], selector: selectorLabels(release, component) },
  });
  const rbac = (kind: string, objName: string, namespaced: boolean, extra: Record<string, unknown>) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: meta(objName, labels, namespaced),
    ...extra,
  });
  const binding = (kind: string, objName: string, role: string, account: string, namespaced: boolean) =>
    rbac(kind, objName, namespaced, {
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: kind === 'ClusterRoleBinding' ? 'ClusterRole' : 'Role', name: role },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace }],
    });
  return [
    ...serviceAccounts,
    rbac('ClusterRole', name, false, { rules: [] }),
    rbac('ClusterRole', `${name}-agent`, false, { rules: [] }),
    rbac('ClusterRole', `${name}-webhook`, false, { rules: [] }),
    binding('ClusterRoleBinding', name, name, fullname, false),
    binding('ClusterRoleBinding', `${name}-agent`, `${name}-agent`, `${fullname}-agent`, false),
    binding('ClusterRoleBinding', `${name}-webhook`, `${name}-webhook`, `${fullname}-webhook`, false),
    rbac('Role', `${name}-lease-manager`, true, { rules: [] }),
    rbac('Role', `${name}-pod-manager`, true, { rules: [] }),
    rbac('Role', `${name}-webhook-secret-manager`, true, { rules: [] }),
    binding('RoleBinding', `${name}-manage-leases`, `${name}-lease-manager`, fullname, true),
    binding('RoleBinding', `${name}-manage-pods`, `${name}-pod-manager`, fullname, true),
    binding('RoleBinding', `${name}-webhook-manage-secrets`, `${name}-webhook-secret-manager`, `${fullname}-webhook`, true),
    service(fullname, labels, 8080, 'metrics', 'metrics', 'controller'),
    service(`${fullname}-webhook`, webhookLabels, values.webhook.service.port, values.webhook.httpsPort, 'https', 'webhook'),
    controller,
    webhook,
  ];
}

/** The (group, plural) each rendered kind is stored under, for installers and `helm uninstall`. */
export const CHART_KINDS: Readonly<Record<string, { group: string; plural: string }>> = Object.freeze({
  ServiceAccount: { group: '', plural: 'serviceaccounts' },
  Service: { group: '', plural: 'services' },
  Deployment: { group: 'apps', plural: 'deployments' },
  ClusterRole: { group: 'rbac.authorization.k8s.io', plural: 'clusterroles' },
  ClusterRoleBinding: { group: 'rbac.authorization.k8s.io', plural: 'clusterrolebindings' },
  Role: { group: 'rbac.authorization.k8s.io', plural: 'roles' },
  RoleBinding: { group: 'rbac.authorization.k8s.io', plural: 'rolebindings' },
});

/**
 * `helm uninstall <release> -n <namespace>`: deletes every object of the release (the ones carrying its annotations).
 * Not the CRDs (Helm never deletes a chart's crds/), not the objects the programs created themselves (agent Pods, the
 * webhook's CA Secret and the ValidatingWebhookConfiguration it owns). Returns what was deleted (`Kind/name`).
 */
export function helmUninstall(store: ObjectStore, release = VM_DHCP_RELEASE, namespace = VM_DHCP_NAMESPACE): string[] {
  const deleted: string[] = [];
  for (const [kind, where] of Object.entries(CHART_KINDS)) {
    const type = store.resourceType(where.group, where.plural);
    if (!type) continue;
    for (const obj of store.list(type)) {
      const annotations = obj.metadata.annotations ?? {};
      if (annotations[HELM_RELEASE_NAME] !== release || annotations[HELM_RELEASE_NAMESPACE] !== namespace) continue;
      store.delete(type, obj.metadata.namespace, obj.metadata.name);
      deleted.push(`${kind}/${obj.metadata.name}`);
    }
  }
  return deleted;
}

function isBeforeV031(appVersion: string): boolean {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(appVersion);
  if (!match) return false;
  const [major, minor, patch] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return major === 0 && (minor < 3 || (minor === 3 && patch === 0));
}

/** The ServiceAccounts the chart creates: `<fullname>`, `<fullname>-agent`, `<fullname>-webhook`. */
export function vmDhcpServiceAccounts(release = VM_DHCP_RELEASE, namespace = VM_DHCP_NAMESPACE): KubeObject[] {
  return renderVmDhcpChart({ release, namespace }).filter((o) => o.kind === 'ServiceAccount');
}

/** The controller Deployment of the chart, the agent image given whole (`repository:tag`) or the chart's default. */
export function vmDhcpControllerDeployment(
  options: { release?: string; namespace?: string; agentImage?: string; noAgent?: boolean; appVersion?: string } = {},
): KubeObject {
  const rendered = renderVmDhcpChart({
    ...options,
    ...(options.agentImage ? { values: { agent: { image: agentImageValues(options.agentImage) } } } : {}),
  });
  return rendered.find((o) => o.kind === 'Deployment' && isVmDhcpControllerDeployment(o))!;
}

/** `repository:tag` → the chart's `agent.image` values (split at the last `:` after the last `/`; no tag → latest). */
export function agentImageValues(image: string): { repository: string; tag: string } {
  const colon = image.lastIndexOf(':');
  if (colon < 0 || colon < image.lastIndexOf('/')) return { repository: image, tag: 'latest' };
  return { repository: image.slice(0, colon), tag: image.slice(colon + 1) };
}

/** The controller's options as cobra parses its container args (cmd/controller/root.go). */
export interface VmDhcpOptions {
  agentNamespace: string;
  /** `repository:tag` as upstream's config.Image prints it. */
  agentImage: string;
  agentServiceAccountName: string;
  noAgent: boolean;
  noDHCP: boolean;
  /**
   * The release has the hold annotation and refreshes running agents to its image (v0.3.0 on). Before it, DeployAgent
   * never rewrote `agentPodRef.image` of a pool with an agent: a new `--image` reached only agents created afterwards.
   */
  refreshesAgents: boolean;
}

/**
 * Parses `--flag value`, `--flag=value` and boolean flags; an unparsable `--image` is an error, as upstream exits 1.
 * `version` (the controller's image tag) picks the image parser: before v1.5.0 the image must be exactly `name:tag`.
 */
export function parseControllerArgs(args: readonly string[], env: Record<string, string> = {}, version = ''): VmDhcpOptions | Error {
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
  const release = vmDhcpRelease(version);
  const image = parseAgentImage(values.get('image') ?? env.AGENT_IMAGE ?? '', release.imageParser);
  if (image instanceof Error) return image;
  return {
    agentNamespace: values.get('namespace') ?? env.AGENT_NAMESPACE ?? '',
    agentImage: image,
    agentServiceAccountName: values.get('service-account-name') ?? env.AGENT_SERVICE_ACCOUNT_NAME ?? '',
    noAgent: values.get('no-agent') === 'true',
    noDHCP: values.get('no-dhcp') === 'true',
    refreshesAgents: release.hasHold,
  };
}

/** Upstream `parseImageNameAndTag` (v1.5.0 on): the image as upstream re-prints it, or its error. */
export function parseImageNameAndTag(image: string): string | Error {
  return parseAgentImage(image, 'parseImageNameAndTag');
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

/** Harvester's add-on for the chart (harvester/experimental-addons `harvester-vm-dhcp-controller.yaml`), enabled. */
export const VM_DHCP_ADDON_LABELS = Object.freeze({ 'addon.harvesterhci.io/experimental': 'true' });

export function vmDhcpAddon(options: { version?: string; agentImage?: string; release?: string; namespace?: string } = {}): KubeObject {
  const agent = options.agentImage ? agentImageValues(options.agentImage) : undefined;
  return {
    apiVersion: 'harvesterhci.io/v1beta1',
    kind: 'Addon',
    metadata: { name: options.release ?? VM_DHCP_RELEASE, namespace: options.namespace ?? VM_DHCP_NAMESPACE, labels: { ...VM_DHCP_ADDON_LABELS } },
    spec: {
      enabled: true,
      repo: 'https://charts.harvesterhci.io',
      version: (options.version ?? VM_DHCP_APP_VERSION).replace(/^v/, ''),
      chart: VM_DHCP_CHART,
      valuesContent: agent ? `agent:\n  image:\n    repository: ${agent.repository}\n    tag: ${agent.tag}\n` : '',
    },
  };
}
