import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import {
  AGENT_CONTAINER,
  AGENT_PORT,
  agentName,
  ANNOTATION_MULTUS,
  LABEL_AGENT,
  LABEL_AGENT_VALUE,
  LABEL_POOL_NAME,
  LABEL_POOL_NAMESPACE,
  splitNetworkName,
} from './names.js';
import type { IPPool } from './types.js';

export interface AgentSettings {
  /** Namespace the agents run in (upstream `harvester-system`). */
  namespace: string;
  serviceAccountName: string;
}

const netAdmin = { capabilities: { add: ['NET_ADMIN'] } };

const probe = (path: string): V1Probe => ({
  httpGet: { path, port: AGENT_PORT, scheme: 'HTTP' },
  periodSeconds: 10,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
});

function prefixOf(cidr: string | undefined): string {
  const slash = cidr?.indexOf('/') ?? -1;
  return slash >= 0 ? cidr!.slice(slash + 1) : '24';
}

/** The agent's labels, exactly upstream's (prepareAgentPod): the agent label and the pool's namespace and name. */
function labelsOf(pool: IPPool): Record<string, string> {
  return {
    [LABEL_AGENT]: LABEL_AGENT_VALUE,
    [LABEL_POOL_NAMESPACE]: pool.metadata!.namespace!,
    [LABEL_POOL_NAME]: pool.metadata!.name!,
  };
}

function nodeAffinity(clusterNetwork: string) {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: `network.harvesterhci.io/${clusterNetwork}`, operator: 'In', values: ['true'] }] }],
      },
    },
  };
}

/** The upstream agent Pod of one pool (spec/agent-pools.md "The agent Pod"). */
export function agentPodManifest(pool: IPPool, image: string, clusterNetwork: string, settings: AgentSettings): V1Pod {
  const ns = pool.metadata!.namespace!;
  const name = pool.metadata!.name!;
  const podName = agentName(ns, name);
  const nad = splitNetworkName(pool.spec?.networkName ?? '', ns);
  const v4 = pool.spec?.ipv4Config ?? {};
  const ipSetter: V1Container = {
    name: 'ip-setter',
    image,
    imagePullPolicy: 'IfNotPresent',
    command: ['/bin/sh', '-c', `ip address flush dev eth1 && ip address add ${v4.serverIP}/${prefixOf(v4.cidr)} dev eth1`],
    securityContext: netAdmin,
  };
  const agent: V1Container = {
    name: AGENT_CONTAINER,
    image,
    imagePullPolicy: 'IfNotPresent',
    args: ['--ippool-ref', `${ns}/${name}`],
    env: [{ name: 'VM_DHCP_AGENT_NAME', value: podName }],
    securityContext: netAdmin,
    livenessProbe: probe('/healthz'),
    readinessProbe: probe('/readyz'),
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName,
      namespace: settings.namespace,
      labels: labelsOf(pool),
      annotations: { [ANNOTATION_MULTUS]: JSON.stringify([{ namespace: nad.namespace, name: nad.name, interface: 'eth1' }]) },
    },
    spec: {
      serviceAccountName: settings.serviceAccountName,
      affinity: nodeAffinity(clusterNetwork),
      initContainers: [ipSetter],
      containers: [agent],
      restartPolicy: 'Always',
    },
  };
}
