/**
 * Fleets for the simulator: the objects a rollplane user would find in a real Harvester / virtual-cluster / peer-pod
 * estate, shaped as described in ../../shared/spec (agent-pools.md, virtual-clusters.md, node-agents.md).
 *
 * - `demo`: 3 nodes, 3 NADs + IPPools with running DHCP agents, ClusterVersion `cv-sample-np` with 2 VirtualClusters
 *   (control planes in their cluster namespaces), the cloud-api-adaptor as its chart installs it (`upstream=caa`:
 *   RollingUpdate DaemonSet, peer-pods-cm) and 2 peer pods per node. `demo,upstream=...` replaces that selection
 *   (`demo,upstream=none` gives the rollplane-shaped OnDelete DaemonSet of the sized fleets).
 * - sizes for benchmarks: `pools=1000,clusters=100,nodes=50[,peers=2]`.
 * - `empty`: nothing but the CRDs.
 *
 * Every fleet first installs the CustomResourceDefinitions of src/sim/crds (as the upstream charts do), then writes
 * only objects those schemas accept unchanged: a field the schema would prune is an error here, not a silent loss.
 *
 * Agent pods are created already Running and Ready (as if the upstream controller had deployed them long ago), so a
 * fleet is consistent at once; workload pods (StatefulSets, DaemonSet, Deployments) come from the simulated
 * controllers when the behaviour runs.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';
import { isoTime } from './behaviour/kube.js';
import { runningContainer, withCondition } from './behaviour/podStatus.js';
import { caaConfigMap, caaDaemonSet, caaSecret, caaServiceAccount, CAA_WORKER_LABEL } from './behaviour/upstream/caaChart.js';
import { parseUpstreamSpec, type UpstreamSelection } from './behaviour/upstream/selection.js';
import { vcManagerObjects } from './behaviour/upstream/vcManagerInstall.js';
import { agentImageValues, CHART_KINDS, renderVmDhcpChart, vmDhcpAddon, VM_DHCP_NAMESPACE } from './behaviour/upstream/vmDhcpChart.js';
import { ADDON_CRD } from './crds/addons.js';
import { installProjectCrds } from './crds/index.js';
import { Resources } from './store/resources.js';
import type { KubeObject, ObjectStore, ResourceType, WriteOptions } from './types.js';

/** The fleet writes what the schemas accept as is: a pruned field is a fleet bug, so it fails loudly. */
const STRICT: WriteOptions = {
  onUnknownFields(paths) {
    throw new ValidationError('fleet', `the simulator fleet wrote fields its CRD schema does not declare: ${paths.join(', ')}`);
  },
};

export interface FleetSize {
  nodes: number;
  /** IPPools, each with its NAD and one agent pod. */
  pools: number;
  /** VirtualClusters of ClusterVersion `cv-sample-np`. */
  clusters: number;
  /** Replicas of the peer-pod Deployment pinned to each node. */
  peers: number;
  /** Upstream controllers installed beside the fleet (`upstream=vm-dhcp+vc-manager+caa`); none when absent. */
  upstream?: UpstreamSelection;
}

/** `demo`, `empty`, a size string (`pools=1000,clusters=100,nodes=50`), or sizes. */
export type FleetSpec = 'demo' | 'empty' | string | Partial<FleetSize>;

/**
 * The demo runs the upstream controllers a field cluster runs beside rollplane: harvester/vm-dhcp-controller (agent-pool
 * rollouts coexist with it, ADR 0017) and the cloud-api-adaptor chart (node-agent rollouts work against it, ADR 0019).
 * `demo,upstream=none` is the demo without them.
 */
export const DEMO_FLEET: Readonly<FleetSize> = Object.freeze({
  nodes: 3,
  pools: 3,
  clusters: 2,
  peers: 2,
  upstream: Object.freeze({ vmDhcp: Object.freeze({}), caa: true }),
});
export const EMPTY_FLEET: Readonly<FleetSize> = Object.freeze({ nodes: 0, pools: 0, clusters: 0, peers: 0 });

export const AGENT_NAMESPACE = 'harvester-system';
export const AGENT_IMAGE = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
export const POOL_NAMESPACE = 'default';
export const CLUSTER_NETWORK = 'mgmt';
export const CLUSTER_VERSION = 'cv-sample-np';
export const VC_NAMESPACE = 'default';
export const NODE_AGENT_NAMESPACE = 'confidential-containers-system';
export const NODE_AGENT_DAEMONSET = 'cloud-api-adaptor-daemonset';
export const NODE_AGENT_IMAGE = 'quay.io/confidential-containers/cloud-api-adaptor:v0.10.0';
export const PEER_NAMESPACE = 'peer-workloads';
export const PEER_RUNTIME_CLASS = 'kata-remote';
/**
 * The agents' ServiceAccount as the vm-dhcp-controller chart names it: `<fullname>-agent`, where fullname is the release
 * name when it contains the chart name `harvester-vm-dhcp-controller` (the README installs it as release
 * `harvester-vm-dhcp-controller`; a release called `harvester` would give `harvester-harvester-vm-dhcp-controller-agent`).
 */
export const AGENT_SERVICE_ACCOUNT = 'harvester-vm-dhcp-controller-agent';
/** The cloud-api-adaptor (peerpods) chart's ServiceAccount, fixed in its rbac.yaml, in the release namespace. */
export const NODE_AGENT_SERVICE_ACCOUNT = 'cloud-api-adaptor';

const KEYS: (keyof FleetSize)[] = ['nodes', 'pools', 'clusters', 'peers'];

/**
 * Parses `demo`, `empty` or `key=n,...` (keys: nodes, pools, clusters, peers; missing keys: 0, peers: 2), each
 * optionally followed by `,upstream=<controller>[+<controller>...]` (see behaviour/upstream/selection.ts).
 */
export function parseFleetSpec(text: string): FleetSize {
  const parts = text.split(',');
  const upstreamParts = parts.filter((p) => /^\s*upstream\s*=/.test(p));
  if (upstreamParts.length > 1) throw new ValidationError('fleet', 'upstream= may be given once');
  const base = parseBaseFleet(parts.filter((p) => !upstreamParts.includes(p)).join(','));
  if (upstreamParts.length === 1) base.upstream = parseUpstreamSpec(upstreamParts[0]!.slice(upstreamParts[0]!.indexOf('=') + 1));
  return base;
}

function parseBaseFleet(text: string): FleetSize {
  const trimmed = text.trim();
  if (trimmed === 'demo') return { ...DEMO_FLEET, upstream: { vmDhcp: {}, caa: true } };
  if (trimmed === 'empty' || trimmed === '') return { ...EMPTY_FLEET };
  const size: FleetSize = { nodes: 0, pools: 0, clusters: 0, peers: 2 };
  for (const part of trimmed.split(',')) {
    const match = /^\s*([a-z]+)\s*=\s*(\d+)\s*$/.exec(part);
    const key = match?.[1] as keyof FleetSize | undefined;
    if (!match || !key || !KEYS.includes(key)) {
      throw new ValidationError('fleet', `expected demo, empty or ${KEYS.join('|')}=<n>,... (got "${part}")`);
    }
    size[key] = Number(match[2]);
  }
  // Pools need a node to run their agent on.
  if (size.pools > 0 && size.nodes === 0) size.nodes = 1;
  return size;
}

export function resolveFleet(fleet: FleetSpec): FleetSize {
  if (typeof fleet === 'string') return parseFleetSpec(fleet);
  return { ...EMPTY_FLEET, peers: 2, ...fleet };
}

export interface FleetSummary {
  size: FleetSize;
  /** Objects created (objects that already existed are kept and not counted). */
  created: number;
  durationMs: number;
}

/**
 * Creates the fleet's objects in the store. Idempotent: objects that already exist are left as they are. Yields to
 * the event loop now and then so a live API server stays responsive while a large fleet is created.
 */
export async function applyFleet(store: ObjectStore, fleet: FleetSpec): Promise<FleetSummary> {
  const started = performance.now();
  const size = resolveFleet(fleet);
  const writer = new FleetWriter(store);
  const nodes = Array.from({ length: size.nodes }, (_, i) => `sim-node-${i + 1}`);
  writer.created += installProjectCrds(store);

  for (const ns of [AGENT_NAMESPACE, POOL_NAMESPACE, VC_NAMESPACE])
    if (size.pools > 0 || size.clusters > 0) await writer.ensure('', 'namespaces', namespaceObject(ns));
  // The ServiceAccounts the upstream charts create (pods naming a missing one are refused, as by the real admission):
  // the vm-dhcp-controller chart's own when it is installed (so that `helm uninstall` removes it), else an equal one.
  if (size.upstream?.vmDhcp) {
    await writer.ensure('', 'namespaces', namespaceObject(VM_DHCP_NAMESPACE));
    const { noAgent, agentImage, version, addon } = size.upstream.vmDhcp;
    // `helm install` of the chart: ServiceAccounts, RBAC, the controller and webhook Deployments and their Services.
    // As a Harvester add-on: the Addon, and the chart as its reconcile rendered it from the Addon's valuesContent.
    if (addon) {
      if (!store.get(Resources.customresourcedefinitions, undefined, ADDON_CRD.metadata.name)) {
        store.create(Resources.customresourcedefinitions, ADDON_CRD);
        writer.created++;
      }
      await writer.ensure('harvesterhci.io', 'addons', vmDhcpAddon({ agentImage: agentImage ?? AGENT_IMAGE, ...(version ? { version } : {}) }));
    }
    const chart = renderVmDhcpChart({
      ...(version ? { appVersion: version, chartVersion: version.replace(/^v/, '') } : {}),
      values: { agent: { image: agentImageValues(agentImage ?? AGENT_IMAGE) } },
      ...(noAgent ? { noAgent } : {}),
    });
    for (const object of chart) {
      const where = CHART_KINDS[object.kind!]!;
      await writer.ensure(where.group, where.plural, object);
    }
  } else if (size.pools > 0 || size.clusters > 0) {
    await writer.ensure('', 'serviceaccounts', serviceAccountObject(AGENT_SERVICE_ACCOUNT, AGENT_NAMESPACE));
  }

  for (let i = 0; i < nodes.length; i++) await writer.ensure('', 'nodes', nodeObject(nodes[i]!, i));

  for (let i = 1; i <= size.pools; i++) {
    const name = `net-${i}`;
    await writer.ensure('k8s.cni.cncf.io', 'network-attachment-definitions', nadObject(name, i));
    const nodeIndex = (i - 1) % nodes.length;
    const agent = await writer.ensure('', 'pods', agentPod(POOL_NAMESPACE, name, i, nodes[nodeIndex]!, nodeIp(nodeIndex), writer.now()));
    await writer.ensure('network.harvesterhci.io', 'ippools', ipPool(name, i, agent, writer.now()));
  }

  if (size.clusters > 0) {
    const cv = await writer.ensure('tenancy.x-k8s.io', 'clusterversions', clusterVersion());
    for (let i = 1; i <= size.clusters; i++) await createVirtualCluster(writer, cv, `vc-${i}`);
  }

  if (nodes.length > 0) {
    await writer.ensure('', 'namespaces', namespaceObject(NODE_AGENT_NAMESPACE));
    await writer.ensure('', 'serviceaccounts', serviceAccountObject(NODE_AGENT_SERVICE_ACCOUNT, NODE_AGENT_NAMESPACE));
    if (size.upstream?.caa) await ensureCaaChart(writer, nodes);
    else await writer.ensure('apps', 'daemonsets', nodeAgentDaemonSet());
    if (size.peers > 0) {
      await writer.ensure('', 'namespaces', namespaceObject(PEER_NAMESPACE));
      for (const node of nodes) await writer.ensure('apps', 'deployments', peerDeployment(node, size.peers));
    }
  }
  if (size.upstream?.vcManager) {
    const vcm = vcManagerObjects(size.upstream.vcManager);
    await writer.ensure('', 'namespaces', vcm.namespace);
    await writer.ensure('', 'serviceaccounts', vcm.serviceAccount);
    await writer.ensure('apps', 'deployments', vcm.deployment);
  }
  return { size, created: writer.created, durationMs: performance.now() - started };
}

class FleetWriter {
  created = 0;
  private sinceYield = 0;

  constructor(private readonly store: ObjectStore) {}

  now(): number {
    return Date.now();
  }

  async ensure(group: string, plural: string, object: KubeObject): Promise<KubeObject> {
    const type = this.type(group, plural);
    const existing = this.store.get(type, object.metadata.namespace, object.metadata.name);
    if (existing) return existing;
    const created = this.store.create(type, object, STRICT);
    this.created++;
    if (++this.sinceYield >= 200) {
      this.sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return created;
  }

  update(group: string, plural: string, object: KubeObject): KubeObject {
    return this.store.update(this.type(group, plural), object, undefined, STRICT);
  }

  private type(group: string, plural: string): ResourceType {
    const type = this.store.resourceType(group, plural);
    if (!type) throw new ValidationError('fleet', `the simulator store does not serve ${plural}${group ? `.${group}` : ''}`);
    return type;
  }
}

function namespaceObject(name: string, labels: Record<string, string> = {}, annotations?: Record<string, string>): KubeObject {
  const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } } };
  if (annotations) ns.metadata.annotations = annotations;
  return ns;
}

function serviceAccountObject(name: string, namespace: string): KubeObject {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } };
}

/** A Ready node as a kubelet registers it; labelled for the `mgmt` cluster network. */
export function nodeObject(name: string, index: number, labels: Record<string, string> = {}): KubeObject {
  const now = isoTime(Date.now());
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      // RKE2 (Harvester's distribution) records each node's arguments; vm-dhcp's v0.3.0 webhook reads the service CIDR here.
      annotations: { 'rke2.io/node-args': JSON.stringify(['server', '--cluster-cidr', '10.52.0.0/16', '--service-cidr', '10.53.0.0/16']) },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'node-role.kubernetes.io/worker': 'true',
        [`network.harvesterhci.io/${CLUSTER_NETWORK}`]: 'true',
        ...labels,
      },
    },
    spec: { podCIDR: `10.42.${index}.0/24` },
    status: {
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: nodeIp(index) },
        { type: 'Hostname', address: name },
      ],
      capacity: { cpu: '16', memory: '65843852Ki', pods: '250' },
      allocatable: { cpu: '16', memory: '65741452Ki', pods: '250' },
      nodeInfo: {
        architecture: 'amd64',
        operatingSystem: 'linux',
        osImage: 'Harvester v1.4.0 (simulated)',
        kernelVersion: '5.14.21',
        containerRuntimeVersion: 'containerd://1.7.11',
        kubeletVersion: 'v1.29.9',
        kubeProxyVersion: 'v1.29.9',
      },
    },
  };
}

/** InternalIP of the fleet's node number `index` (0-based). */
export function nodeIp(index: number): string {
  return `192.168.${10 + Math.floor(index / 250)}.${(index % 250) + 1}`;
}

function nadObject(name: string, index: number): KubeObject {
  const vlan = 100 + (index % 4000);
  return {
    apiVersion: 'k8s.cni.cncf.io/v1',
    kind: 'NetworkAttachmentDefinition',
    metadata: {
      name,
      namespace: POOL_NAMESPACE,
      labels: {
        'network.harvesterhci.io/clusternetwork': CLUSTER_NETWORK,
        'network.harvesterhci.io/ready': 'true',
        'network.harvesterhci.io/type': 'L2VlanNetwork',
        'network.harvesterhci.io/vlan-id': String(vlan),
      },
    },
    spec: {
      config: JSON.stringify({ cniVersion: '0.3.1', name, type: 'bridge', bridge: `${CLUSTER_NETWORK}-br`, promiscMode: true, vlan, ipam: {} }),
    },
  };
}

/** The agent pod name rule of spec/agent-pools.md. */
export function agentPodName(poolNamespace: string, poolName: string): string {
  const base = `${poolNamespace}-${poolName}`;
  if (base.length < 58) return `${base}-agent`;
  const digest = createHash('sha256').update(base).digest('hex').slice(0, 5);
  return `${base.slice(0, 51)}-${digest}-agent`;
}

interface PoolNetwork {
  cidr: string;
  prefix: number;
  serverIP: string;
  router: string;
  start: string;
  end: string;
}

function poolNetwork(index: number): PoolNetwork {
  const net = `172.${16 + (Math.floor(index / 256) % 16)}.${index % 256}`;
  return { cidr: `${net}.0/24`, prefix: 24, serverIP: `${net}.2`, router: `${net}.1`, start: `${net}.10`, end: `${net}.250` };
}

/** An agent pod exactly as the upstream controller deploys it, already Running and Ready on `nodeName`. */
export function agentPod(
  poolNamespace: string,
  poolName: string,
  index: number,
  nodeName: string,
  hostIP: string,
  now: number,
  image = AGENT_IMAGE,
): KubeObject {
  const name = agentPodName(poolNamespace, poolName);
  const net = poolNetwork(index);
  const netAdmin = { capabilities: { add: ['NET_ADMIN'] } };
  const probe = (path: string) => ({
    httpGet: { path, port: 8080, scheme: 'HTTP' },
    periodSeconds: 10,
    timeoutSeconds: 1,
    successThreshold: 1,
    failureThreshold: 3,
  });
  let conditions = withCondition(undefined, 'PodScheduled', 'True', now);
  for (const type of ['Initialized', 'ContainersReady', 'Ready']) conditions = withCondition(conditions, type, 'True', now);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: AGENT_NAMESPACE,
      labels: {
        'network.harvesterhci.io/vm-dhcp-controller': 'agent',
        'network.harvesterhci.io/ippool-namespace': poolNamespace,
        'network.harvesterhci.io/ippool-name': poolName,
      },
      annotations: {
        'k8s.v1.cni.cncf.io/networks': JSON.stringify([{ namespace: POOL_NAMESPACE, name: poolName, interface: 'eth1' }]),
      },
    },
    spec: {
      serviceAccountName: AGENT_SERVICE_ACCOUNT,
      nodeName,
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: `network.harvesterhci.io/${CLUSTER_NETWORK}`, operator: 'In', values: ['true'] }] }],
          },
        },
      },
      initContainers: [
        {
          name: 'ip-setter',
          image,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sh', '-c', `ip address flush dev eth1 && ip address add ${net.serverIP}/${net.prefix} dev eth1`],
          securityContext: netAdmin,
        },
      ],
      containers: [
        {
          name: 'agent',
          image,
          imagePullPolicy: 'IfNotPresent',
          args: ['--ippool-ref', `${poolNamespace}/${poolName}`],
          env: [{ name: 'VM_DHCP_AGENT_NAME', value: name }],
          securityContext: netAdmin,
          livenessProbe: probe('/healthz'),
          readinessProbe: probe('/readyz'),
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
    },
    status: {
      phase: 'Running',
      conditions,
      hostIP,
      hostIPs: [{ ip: hostIP }],
      podIP: `10.52.${Math.floor(index / 250) % 256}.${(index % 250) + 2}`,
      startTime: isoTime(now),
      initContainerStatuses: [
        {
          name: 'ip-setter',
          image,
          imageID: runningContainer('ip-setter', image, now, 0, true).imageID,
          ready: true,
          restartCount: 0,
          state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: isoTime(now), finishedAt: isoTime(now) } },
          lastState: {},
        },
      ],
      containerStatuses: [runningContainer('agent', image, now, 0, true)],
      qosClass: 'BestEffort',
    },
  };
}

function ipPool(name: string, index: number, agent: KubeObject, now: number): KubeObject {
  const net = poolNetwork(index);
  const stamp = isoTime(now);
  const ready = (type: string) => ({ type, status: 'True', lastUpdateTime: stamp });
  return {
    apiVersion: 'network.harvesterhci.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name, namespace: POOL_NAMESPACE, labels: { 'network.harvesterhci.io/clusternetwork': CLUSTER_NETWORK } },
    spec: {
      ipv4Config: {
        cidr: net.cidr,
        serverIP: net.serverIP,
        pool: { start: net.start, end: net.end, exclude: [] },
        router: net.router,
        dns: ['1.1.1.1'],
        domainName: 'sim.local',
        leaseTime: 300,
      },
      networkName: `${POOL_NAMESPACE}/${name}`,
      paused: false,
    },
    status: {
      lastUpdate: stamp,
      // As upstream's OnChange marks them: the server and router are RESERVED only inside the range (here they are not).
      ipv4: { used: 0, available: 241 },
      agentPodRef: {
        namespace: agent.metadata.namespace,
        name: agent.metadata.name,
        image: agent.spec.containers[0].image,
        uid: agent.metadata.uid,
      },
      conditions: [ready('Registered'), ready('CacheReady'), ready('AgentReady')],
    },
  };
}

function statefulSet(name: string, serviceName: string, image: string, command: string[], port: number, annotations: Record<string, string> = {}): KubeObject {
  const labels = { 'component-name': name };
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, labels },
    spec: {
      replicas: 1,
      serviceName,
      podManagementPolicy: 'OrderedReady',
      revisionHistoryLimit: 10,
      selector: { matchLabels: labels },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      template: {
        metadata: { labels, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
        spec: {
          subdomain: serviceName,
          containers: [
            {
              name,
              image,
              imagePullPolicy: 'Always',
              command,
              ports: [{ containerPort: port, name: `${name}-port` }],
              readinessProbe: { tcpSocket: { port }, initialDelaySeconds: 5, periodSeconds: 10 },
            },
          ],
        },
      },
    },
  };
}

function service(name: string, selector: string, port: number, type: 'ClusterIP' | 'NodePort', headless = false): KubeObject {
  const spec: Record<string, unknown> = {
    type,
    selector: { 'component-name': selector },
    ports: [{ name: `${selector}-port`, port, protocol: 'TCP', targetPort: port }],
  };
  if (headless) spec.clusterIP = 'None';
  return { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec };
}

/** The upstream sample ClusterVersion with a NodePort apiserver Service. */
function clusterVersion(): KubeObject {
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'ClusterVersion',
    metadata: { name: CLUSTER_VERSION },
    spec: {
      etcd: {
        metadata: { name: 'etcd' },
        statefulset: statefulSet('etcd', 'etcd', 'virtualcluster/etcd-v3.4.0', ['etcd'], 2379),
        service: service('etcd', 'etcd', 2379, 'ClusterIP', true),
      },
      apiServer: {
        metadata: { name: 'apiserver' },
        statefulset: statefulSet('apiserver', 'apiserver-svc', 'virtualcluster/apiserver-v1.16.2', ['kube-apiserver'], 6443),
        service: service('apiserver-svc', 'apiserver', 6443, 'NodePort'),
      },
      controllerManager: {
        metadata: { name: 'controller-manager' },
        statefulset: statefulSet(
          'controller-manager',
          'controller-manager-svc',
          'virtualcluster/controller-manager-v1.16.2',
          ['kube-controller-manager'],
          10252,
        ),
        service: service('controller-manager-svc', 'controller-manager', 10252, 'ClusterIP', true),
      },
    },
    status: {},
  };
}

const PKI_SECRETS = ['root-ca', 'apiserver-ca', 'etcd-ca', 'front-proxy-ca', 'controller-manager-kubeconfig', 'admin-kubeconfig', 'serviceaccount-rsa'];
/** The secrets whose hashes force a restart of each component (spec/virtual-clusters.md). */
const HASHED: Record<string, string[]> = {
  apiserver: ['root-ca', 'apiserver-ca', 'front-proxy-ca', 'serviceaccount-rsa'],
  'controller-manager': ['root-ca', 'serviceaccount-rsa', 'controller-manager-kubeconfig'],
  etcd: [],
};

function pkiSecret(name: string, namespace: string, cluster: string): KubeObject {
  const placeholder = (what: string) => Buffer.from(`simulated ${what} for ${cluster}/${name}\n`).toString('base64');
  const data: Record<string, string> = name.endsWith('kubeconfig')
    ? { [name]: placeholder('kubeconfig') }
    : name === 'serviceaccount-rsa'
      ? { 'tls.crt': placeholder('rsa public key'), 'tls.key': placeholder('rsa key') }
      : { 'tls.crt': placeholder('certificate'), 'tls.key': placeholder('key') };
  // Types as upstream's secret.go creates them: kubeconfigs Opaque, key pairs (the service-account key too) TLS.
  const type = name.endsWith('kubeconfig') ? 'Opaque' : 'kubernetes.io/tls';
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type, data };
}

export function secretHash(secret: KubeObject): string {
  return createHash('sha256')
    .update(JSON.stringify(secret.data ?? {}))
    .digest('hex');
}

/** Upstream's cluster key: `<namespace>-<first 6 hex of sha256(uid)>-<name>`. */
export function clusterNamespaceOf(vc: KubeObject): string {
  const digest = createHash('sha256')
    .update(vc.metadata.uid ?? '')
    .digest('hex')
    .slice(0, 6);
  return `${vc.metadata.namespace}-${digest}-${vc.metadata.name}`;
}

async function createVirtualCluster(writer: FleetWriter, cv: KubeObject, name: string): Promise<void> {
  const applied = { 'tenancy.x-k8s.io/cluster-version-applied': cv.metadata.resourceVersion ?? '' };
  let vc = await writer.ensure('tenancy.x-k8s.io', 'virtualclusters', {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name, namespace: VC_NAMESPACE, labels: applied },
    spec: { clusterDomain: 'cluster.local', clusterVersionName: CLUSTER_VERSION, pkiExpireDays: 365 },
  });
  const clusterNs = clusterNamespaceOf(vc);
  if (vc.status?.phase !== 'Running') {
    const stamp = isoTime(writer.now());
    vc = writer.update('tenancy.x-k8s.io', 'virtualclusters', {
      ...vc,
      status: {
        phase: 'Running',
        clusterNamespace: clusterNs,
        reason: 'TenantControlPlaneRunning',
        message: 'tenant control plane is running',
        // The upstream VirtualCluster CRD's conditions have no `type` (a real API server prunes one).
        conditions: [{ status: 'True', reason: 'TenantControlPlaneRunning', message: 'tenant control plane is running', lastTransitionTime: stamp }],
      },
    });
  }
  await writer.ensure(
    '',
    'namespaces',
    namespaceObject(clusterNs, { 'tenancy.x-k8s.io/vcname': name, 'tenancy.x-k8s.io/vcnamespace': VC_NAMESPACE }, { 'tenancy.x-k8s.io/cluster': clusterNs }),
  );
  const hashes: Record<string, string> = {};
  for (const secretName of PKI_SECRETS) {
    const secret = await writer.ensure('', 'secrets', pkiSecret(secretName, clusterNs, name));
    hashes[secretName] = secretHash(secret);
  }
  for (const bundle of ['etcd', 'apiServer', 'controllerManager'] as const) {
    const spec = cv.spec[bundle];
    await writer.ensure('', 'services', { ...spec.service, metadata: { ...spec.service.metadata, namespace: clusterNs } });
    const sts: KubeObject = spec.statefulset;
    const annotations: Record<string, string> = {};
    for (const secretName of HASHED[sts.metadata.name] ?? []) annotations[`${secretName}-hash`] = hashes[secretName]!;
    const template = sts.spec.template;
    await writer.ensure('apps', 'statefulsets', {
      ...sts,
      metadata: { ...sts.metadata, namespace: clusterNs, labels: { ...sts.metadata.labels, ...applied } },
      spec: {
        ...sts.spec,
        template: { ...template, metadata: { ...template.metadata, annotations: { ...template.metadata?.annotations, ...annotations } } },
      },
    });
  }
}

/** The cloud-api-adaptor DaemonSet (one agent per node); rollplane drives its node-by-node update (OnDelete). */
function nodeAgentDaemonSet(): KubeObject {
  const labels = { app: 'cloud-api-adaptor', 'rollplane.io/node-agent': 'true' };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: NODE_AGENT_DAEMONSET, namespace: NODE_AGENT_NAMESPACE, labels },
    spec: {
      selector: { matchLabels: { app: 'cloud-api-adaptor' } },
      updateStrategy: { type: 'OnDelete' },
      template: {
        metadata: { labels },
        spec: {
          hostNetwork: true,
          serviceAccountName: NODE_AGENT_SERVICE_ACCOUNT,
          containers: [
            {
              name: 'cloud-api-adaptor-con',
              image: NODE_AGENT_IMAGE,
              imagePullPolicy: 'Always',
              command: ['/usr/local/bin/entrypoint.sh'],
              env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } }],
              securityContext: { privileged: true },
              startupProbe: { httpGet: { path: '/startup', port: 8000 }, failureThreshold: 30, periodSeconds: 20, initialDelaySeconds: 20 },
            },
          ],
        },
      },
    },
  };
}

/**
 * The cloud-api-adaptor as the upstream `peerpods` chart installs it (ServiceAccount, Secret, `peer-pods-cm`, the
 * RollingUpdate maxUnavailable 0 / maxSurge 1 DaemonSet), the worker label its nodeSelector needs on every node, and
 * rollplane's `rollplane.io/node-agent` label as an operator adds it after installing (pods get it via podLabels).
 */
async function ensureCaaChart(writer: FleetWriter, nodes: string[]): Promise<void> {
  const values = {
    namespace: NODE_AGENT_NAMESPACE,
    image: NODE_AGENT_IMAGE,
    runtimeClassName: PEER_RUNTIME_CLASS,
    podLabels: { 'rollplane.io/node-agent': 'true' },
    extraDaemonSetLabels: { 'rollplane.io/node-agent': 'true' },
  };
  await writer.ensure('', 'serviceaccounts', caaServiceAccount(NODE_AGENT_NAMESPACE));
  await writer.ensure('', 'secrets', caaSecret(NODE_AGENT_NAMESPACE));
  await writer.ensure('', 'configmaps', caaConfigMap(values));
  for (const name of nodes) {
    const node = await writer.ensure('', 'nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    if (node.metadata.labels?.[CAA_WORKER_LABEL] === undefined) {
      writer.update('', 'nodes', { ...node, metadata: { ...node.metadata, labels: { ...node.metadata.labels, [CAA_WORKER_LABEL]: '' } } });
    }
  }
  await writer.ensure('apps', 'daemonsets', caaDaemonSet(values));
}

/** A small peer-pod workload pinned to one node (the upstream e2e uses a 2-replica Deployment). */
function peerDeployment(node: string, replicas: number): KubeObject {
  const labels = { app: 'peer-nginx', 'rollplane.io/peer-node': node };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `peer-nginx-${node}`, namespace: PEER_NAMESPACE, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
      template: {
        metadata: { labels },
        spec: {
          runtimeClassName: PEER_RUNTIME_CLASS,
          nodeSelector: { 'kubernetes.io/hostname': node },
          containers: [{ name: 'nginx', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }],
        },
      },
    },
  };
}
