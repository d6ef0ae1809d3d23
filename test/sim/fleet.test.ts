import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors.js';
import { startBehaviour, zeroDelays, type Behaviour } from '../../src/sim/behaviour/index.js';
import {
  AGENT_IMAGE,
  AGENT_NAMESPACE,
  agentPodName,
  applyFleet,
  clusterNamespaceOf,
  CLUSTER_VERSION,
  NODE_AGENT_DAEMONSET,
  NODE_AGENT_IMAGE,
  NODE_AGENT_NAMESPACE,
  parseFleetSpec,
  PEER_NAMESPACE,
} from '../../src/sim/fleet.js';
import { startSimulator } from '../../src/sim/index.js';
import { MemoryStore } from '../../src/sim/store/MemoryStore.js';
import { Resources } from '../../src/sim/store/resources.js';
import type { KubeObject } from '../../src/sim/types.js';
import { until } from '../helpers/until.js';

let behaviour: Behaviour | undefined;
afterEach(() => {
  behaviour?.stop();
  behaviour = undefined;
});

const ready = (obj: KubeObject | undefined) => obj?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.status === 'True';

/** Waits for `predicate`, letting the simulated controllers settle between two looks. */
function settled(predicate: () => boolean, what: string): Promise<boolean> {
  return until(what, async () => predicate() || (await behaviour?.idle(), predicate()), { timeoutMs: 10_000, intervalMs: 5 });
}

describe('parseFleetSpec', () => {
  it('reads demo, empty and sizes', () => {
    expect(parseFleetSpec('demo')).toEqual({ nodes: 3, pools: 3, clusters: 2, peers: 2, upstream: { vmDhcp: {}, caa: true } });
    expect(parseFleetSpec('demo,upstream=none')).toEqual({ nodes: 3, pools: 3, clusters: 2, peers: 2, upstream: {} });
    expect(parseFleetSpec('empty')).toEqual({ nodes: 0, pools: 0, clusters: 0, peers: 0 });
    expect(parseFleetSpec('pools=1000,clusters=100,nodes=50')).toEqual({ nodes: 50, pools: 1000, clusters: 100, peers: 2 });
    expect(parseFleetSpec('pools=5')).toMatchObject({ nodes: 1, pools: 5 });
  });

  it('rejects unknown keys and malformed parts', () => {
    expect(() => parseFleetSpec('pods=5')).toThrow(ValidationError);
    expect(() => parseFleetSpec('pools=many')).toThrow(/expected demo, empty/);
  });
});

describe('agentPodName', () => {
  it('follows the upstream rule, hashing names of 58 characters or more', () => {
    expect(agentPodName('default', 'net-48')).toBe('default-net-48-agent');
    const long = 'x'.repeat(60);
    const name = agentPodName('default', long);
    expect(name).toMatch(/^default-x{43}-[0-9a-f]{5}-agent$/);
    expect(name.length).toBe(51 + 1 + 5 + 6);
  });
});

describe('the demo fleet', () => {
  it('looks like the specs: nodes, NADs, pools with Ready agents, cluster versions, virtual clusters, node agents', async () => {
    const store = new MemoryStore();
    const summary = await applyFleet(store, 'demo');
    expect(summary.created).toBeGreaterThan(30);

    const nodes = store.list(Resources.nodes);
    expect(nodes).toHaveLength(3);
    for (const node of nodes) {
      expect(node.metadata.labels!['network.harvesterhci.io/mgmt']).toBe('true');
      expect(ready(node)).toBe(true);
    }

    const nads = store.list(Resources.networkAttachmentDefinitions, 'default');
    expect(nads.map((n) => n.metadata.name).sort()).toEqual(['net-1', 'net-2', 'net-3']);
    for (const nad of nads) expect(nad.metadata.labels!['network.harvesterhci.io/clusternetwork']).toBe('mgmt');

    const pools = store.list(Resources.ippools, 'default');
    expect(pools).toHaveLength(3);
    for (const pool of pools) {
      const name = pool.metadata.name;
      expect(pool.spec.networkName).toBe(`default/${name}`);
      expect(pool.spec.ipv4Config).toMatchObject({
        cidr: expect.stringMatching(/\/24$/),
        serverIP: expect.any(String),
        pool: { start: expect.any(String), end: expect.any(String) },
      });
      const agent = store.get(Resources.pods, AGENT_NAMESPACE, `default-${name}-agent`)!;
      expect(pool.status.agentPodRef).toEqual({ namespace: AGENT_NAMESPACE, name: `default-${name}-agent`, image: AGENT_IMAGE, uid: agent.metadata.uid });
      for (const type of ['Registered', 'CacheReady', 'AgentReady']) {
        expect(pool.status.conditions.find((c: { type: string }) => c.type === type)?.status).toBe('True');
      }
      expect(agent.metadata.labels).toEqual({
        'network.harvesterhci.io/vm-dhcp-controller': 'agent',
        'network.harvesterhci.io/ippool-namespace': 'default',
        'network.harvesterhci.io/ippool-name': name,
      });
      expect(JSON.parse(agent.metadata.annotations!['k8s.v1.cni.cncf.io/networks'])).toEqual([{ namespace: 'default', name, interface: 'eth1' }]);
      expect(agent.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]).toEqual({
        key: 'network.harvesterhci.io/mgmt',
        operator: 'In',
        values: ['true'],
      });
      expect(agent.spec.initContainers[0]).toMatchObject({ name: 'ip-setter', image: AGENT_IMAGE, securityContext: { capabilities: { add: ['NET_ADMIN'] } } });
      expect(agent.spec.initContainers[0].command.join(' ')).toContain(`${pool.spec.ipv4Config.serverIP}/24`);
      expect(agent.spec.containers[0]).toMatchObject({
        name: 'agent',
        image: AGENT_IMAGE,
        args: ['--ippool-ref', `default/${name}`],
        env: [{ name: 'VM_DHCP_AGENT_NAME', value: `default-${name}-agent` }],
        livenessProbe: { httpGet: { path: '/healthz', port: 8080 } },
        readinessProbe: { httpGet: { path: '/readyz', port: 8080 } },
      });
      expect(agent.status.phase).toBe('Running');
      expect(ready(agent)).toBe(true);
    }

    const cv = store.get(Resources.clusterversions, undefined, CLUSTER_VERSION)!;
    for (const bundle of ['etcd', 'apiServer', 'controllerManager']) {
      expect(cv.spec[bundle].statefulset).toMatchObject({ apiVersion: 'apps/v1', kind: 'StatefulSet' });
      expect(cv.spec[bundle].service).toMatchObject({ apiVersion: 'v1', kind: 'Service' });
    }
    expect(cv.spec.apiServer.metadata.name).toBe('apiserver');

    const vcs = store.list(Resources.virtualclusters, 'default');
    expect(vcs).toHaveLength(2);
    for (const vc of vcs) {
      expect(vc.spec.clusterVersionName).toBe(CLUSTER_VERSION);
      expect(vc.status.phase).toBe('Running');
      expect(vc.status.clusterNamespace).toBe(clusterNamespaceOf(vc));
      expect(vc.status.clusterNamespace).toMatch(new RegExp(`^default-[0-9a-f]{6}-${vc.metadata.name}$`));
      expect(vc.metadata.labels!['tenancy.x-k8s.io/cluster-version-applied']).toBe(cv.metadata.resourceVersion);
      const ns = vc.status.clusterNamespace;
      expect(store.get(Resources.namespaces, undefined, ns)).toBeDefined();
      expect(
        store
          .list(Resources.statefulsets, ns)
          .map((s) => s.metadata.name)
          .sort(),
      ).toEqual(['apiserver', 'controller-manager', 'etcd']);
      for (const sts of store.list(Resources.statefulsets, ns)) {
        expect(sts.spec.updateStrategy.type).toBe('RollingUpdate');
        expect(sts.metadata.labels!['tenancy.x-k8s.io/cluster-version-applied']).toBe(cv.metadata.resourceVersion);
      }
      expect(Object.keys(store.get(Resources.statefulsets, ns, 'apiserver')!.spec.template.metadata.annotations).sort()).toEqual([
        'apiserver-ca-hash',
        'front-proxy-ca-hash',
        'root-ca-hash',
        'serviceaccount-rsa-hash',
      ]);
      expect(
        store
          .list(Resources.services, ns)
          .map((s) => s.metadata.name)
          .sort(),
      ).toEqual(['apiserver-svc', 'controller-manager-svc', 'etcd']);
      expect(
        store
          .list(Resources.secrets, ns)
          .map((s) => s.metadata.name)
          .sort(),
      ).toEqual(['admin-kubeconfig', 'apiserver-ca', 'controller-manager-kubeconfig', 'etcd-ca', 'front-proxy-ca', 'root-ca', 'serviceaccount-rsa']);
    }

    const ds = store.get(Resources.daemonsets, NODE_AGENT_NAMESPACE, NODE_AGENT_DAEMONSET)!;
    expect(ds.metadata.labels!['rollplane.io/node-agent']).toBe('true');
    expect(ds.spec.template.spec.containers[0].image).toBe(NODE_AGENT_IMAGE);
    const peerDeployments = store.list(Resources.deployments, PEER_NAMESPACE);
    expect(peerDeployments).toHaveLength(3);
    for (const d of peerDeployments) {
      expect(d.spec.replicas).toBe(2);
      expect(d.spec.template.spec.runtimeClassName).toBe('kata-remote');
    }

    // Applying it again changes nothing.
    const revision = store.currentRevision();
    expect((await applyFleet(store, 'demo')).created).toBe(0);
    expect(store.currentRevision()).toBe(revision);
  });

  it('comes alive with the behaviour: control planes, node agents and peer pods Ready on every node', async () => {
    const store = new MemoryStore();
    behaviour = startBehaviour(store, { delays: zeroDelays });
    await applyFleet(store, 'demo');
    const pods = () => store.list(Resources.pods);
    // + 2: the demo runs the vm-dhcp-controller chart (the controller's and the webhook's Deployment, a pod each).
    await settled(() => pods().length === 3 + 2 * 3 + 3 + 6 + 2 && pods().every(ready), 'every pod Ready');
    for (const node of ['sim-node-1', 'sim-node-2', 'sim-node-3']) {
      const onNode = store.list(Resources.pods).filter((p) => p.spec.nodeName === node);
      expect(onNode.filter((p) => p.metadata.namespace === NODE_AGENT_NAMESPACE)).toHaveLength(1);
      expect(onNode.filter((p) => p.spec.runtimeClassName === 'kata-remote')).toHaveLength(2);
    }
    const ds = store.get(Resources.daemonsets, NODE_AGENT_NAMESPACE, NODE_AGENT_DAEMONSET)!;
    expect(ds.status).toMatchObject({ desiredNumberScheduled: 3, numberAvailable: 3, updatedNumberScheduled: 3 });
    for (const vc of store.list(Resources.virtualclusters, 'default')) {
      for (const sts of store.list(Resources.statefulsets, vc.status.clusterNamespace)) {
        expect(sts.status).toMatchObject({ replicas: 1, readyReplicas: 1, updatedReplicas: 1, currentRevision: sts.status.updateRevision });
      }
    }
  });

  it('is served over HTTP by startSimulator (ippools -A through client-node)', async () => {
    const sim = await startSimulator({ delays: zeroDelays, fleet: 'demo' });
    try {
      const custom = sim.kubeConfig.makeApiClient(CustomObjectsApi);
      const list = (await custom.listClusterCustomObject({ group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools' })) as {
        items: KubeObject[];
      };
      expect(list.items.map((p) => p.metadata.name).sort()).toEqual(['net-1', 'net-2', 'net-3']);
      expect(list.items[0]!.status.agentPodRef.image).toBe(AGENT_IMAGE);
    } finally {
      await sim.stop();
    }
  });
});

describe('generated fleets', () => {
  it('creates pools=1000,clusters=100,nodes=50 with an agent per pool and converges with zero delays', async () => {
    const store = new MemoryStore();
    behaviour = startBehaviour(store, { delays: zeroDelays });
    const summary = await applyFleet(store, 'pools=1000,clusters=100,nodes=50');
    expect(summary.size).toEqual({ nodes: 50, pools: 1000, clusters: 100, peers: 2 });
    expect(store.list(Resources.ippools, 'default')).toHaveLength(1000);
    expect(store.list(Resources.pods, AGENT_NAMESPACE)).toHaveLength(1000);
    expect(store.list(Resources.virtualclusters, 'default')).toHaveLength(100);
    expect(store.list(Resources.nodes)).toHaveLength(50);
    // Agents are spread over the nodes.
    const perNode = new Map<string, number>();
    for (const p of store.list(Resources.pods, AGENT_NAMESPACE)) perNode.set(p.spec.nodeName, (perNode.get(p.spec.nodeName) ?? 0) + 1);
    expect(perNode.size).toBe(50);
    // 1000 agents + 300 control-plane pods + 50 node agents + 100 peer pods.
    await settled(() => store.list(Resources.pods).length === 1450 && store.list(Resources.pods).every(ready), 'all 1450 pods Ready');
  });
});
