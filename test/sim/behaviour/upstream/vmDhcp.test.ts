/**
 * harvester/vm-dhcp-controller's IPPool controller as a simulator behaviour, seen through client-node: installed by
 * the fleet option, configured by its Deployment's args, so bumping `--image` is the Helm upgrade.
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi, Watch, type V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { parseFleetSpec } from '../../../../src/sim/fleet.js';
import { startSimulator, type Simulator } from '../../../../src/sim/index.js';
import { helmFullname, parseImageNameAndTag, safeAgentName, VM_DHCP_RELEASE } from '../../../../src/sim/behaviour/upstream/vmDhcpChart.js';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { condition, jsonPatch, mergePatch, readUntil } from './helpers.js';

const NS = 'harvester-system';
const CONTROLLER = 'harvester-vm-dhcp-controller';
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.4.0';
const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';
const POOL = { group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools', namespace: 'default' };

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

async function start(fleet: string): Promise<{ core: CoreV1Api; apps: AppsV1Api; custom: CustomObjectsApi }> {
  sim = await startSimulator({
    fleet,
    delays: { ...zeroDelays, podTerminateMs: 5, controllerMs: 1 },
    upstreamTiming: { vmDhcp: { retryMaxMs: 50 } },
  });
  return {
    core: sim.kubeConfig.makeApiClient(CoreV1Api),
    apps: sim.kubeConfig.makeApiClient(AppsV1Api),
    custom: sim.kubeConfig.makeApiClient(CustomObjectsApi),
  };
}

const pool = (custom: CustomObjectsApi, name: string): Promise<any> => custom.getNamespacedCustomObject({ ...POOL, name });
const allTrue = (p: any) => ['Registered', 'CacheReady', 'AgentReady'].every((t) => condition(p, t)?.status === 'True');

/** The "helm upgrade": the chart templates `--image` into the controller Deployment's args. */
async function setControllerImage(apps: AppsV1Api, image: string): Promise<void> {
  const d = await apps.readNamespacedDeployment({ name: CONTROLLER, namespace: NS });
  const args = [...d.spec!.template.spec!.containers[0]!.args!];
  args[args.indexOf('--image') + 1] = image;
  await apps.patchNamespacedDeployment(
    { name: CONTROLLER, namespace: NS, body: [{ op: 'replace', path: '/spec/template/spec/containers/0/args', value: args }] },
    jsonPatch,
  );
}

describe('the vm-dhcp-controller chart as the fleet installs it', () => {
  it('derives its names from the chart: Deployment, ServiceAccounts and the controller args', async () => {
    const { core, apps } = await start('pools=1,upstream=vm-dhcp');
    expect(helmFullname(VM_DHCP_RELEASE)).toBe(CONTROLLER);
    expect(helmFullname('harvester')).toBe('harvester-harvester-vm-dhcp-controller'); // the chart's rule, for the record
    const d = await apps.readNamespacedDeployment({ name: CONTROLLER, namespace: NS });
    expect(d.metadata!.labels).toMatchObject({
      'app.kubernetes.io/name': CONTROLLER,
      'app.kubernetes.io/instance': CONTROLLER,
      'app.kubernetes.io/component': 'controller',
    });
    expect(d.spec!.template.spec!.serviceAccountName).toBe(CONTROLLER);
    expect(d.spec!.template.spec!.containers[0]!.args).toEqual([
      '--name',
      CONTROLLER,
      '--namespace',
      NS,
      '--image',
      OLD,
      '--service-account-name',
      `${CONTROLLER}-agent`,
    ]);
    const sas = await core.listNamespacedServiceAccount({ namespace: NS });
    // The chart's three, beside the namespace's own `default` (the ServiceAccount controller creates it).
    expect(sas.items.map((s) => s.metadata!.name).sort()).toEqual(['default', CONTROLLER, `${CONTROLLER}-agent`, `${CONTROLLER}-webhook`]);
  });

  it('parses the image as upstream does, and names agents by upstream SafeAgentConcatName', () => {
    expect(parseImageNameAndTag('repo/agent:v1')).toBe('repo/agent:v1');
    expect(parseImageNameAndTag('repo/agent')).toBe('repo/agent:latest');
    expect(parseImageNameAndTag('registry:5000/agent')).toBe('registry:5000/agent:latest');
    expect(parseImageNameAndTag('repo/agent:')).toBeInstanceOf(Error);
    expect(safeAgentName('default', 'net-48')).toBe('default-net-48-agent');
    // 51st character '-' (not [a-z0-9]): 50 characters + 6 hex digits.
    const name = safeAgentName('default', `${'a'.repeat(42)}-${'b'.repeat(20)}`);
    expect(name).toMatch(/^default-a{42}-[0-9a-f]{6}-agent$/);
  });

  it('parses the fleet option and refuses unknown behaviours', () => {
    expect(parseFleetSpec('demo,upstream=vm-dhcp+vc-manager:partial-upgrade+caa')).toMatchObject({
      nodes: 3,
      upstream: { vmDhcp: {}, vcManager: { partialUpgrade: true }, caa: true },
    });
    expect(parseFleetSpec('pools=2,upstream=vm-dhcp:no-agent').upstream).toEqual({ vmDhcp: { noAgent: true } });
    // The demo runs the vm-dhcp-controller and the CAA chart (ADRs 0017, 0019); an explicit upstream= replaces that.
    expect(parseFleetSpec('demo').upstream).toEqual({ vmDhcp: {}, caa: true });
    expect(parseFleetSpec('demo,upstream=vc-manager').upstream).toEqual({ vcManager: {} });
    expect(() => parseFleetSpec('demo,upstream=vm-dhcp+nope')).toThrow(/expected none or vm-dhcp/);
  });
});

describe('vm-dhcp-controller IPPool controller', () => {
  it('a Helm upgrade of --image recreates every unheld agent at once; a held pool keeps its agent and image', async () => {
    const { core, apps, custom } = await start('pools=3,upstream=vm-dhcp');
    const before = await readUntil(
      'the pools are registered',
      () => Promise.all([1, 2, 3].map((i) => pool(custom, `net-${i}`))),
      (ps) => ps.every(allTrue),
    );
    await custom.patchNamespacedCustomObject({ ...POOL, name: 'net-3', body: { metadata: { annotations: { [HOLD]: 'true' } } } }, mergePatch);

    // Watch the agents from a complete list, as an informer does, recording the order of deletions and creations.
    const list = await core.listNamespacedPod({ namespace: NS, labelSelector: 'network.harvesterhci.io/vm-dhcp-controller=agent' });
    const oldUids = new Map(list.items.map((p) => [p.metadata!.name!, p.metadata!.uid!]));
    const log: string[] = [];
    const watch = await new Watch(sim!.kubeConfig).watch(
      `/api/v1/namespaces/${NS}/pods`,
      { labelSelector: 'network.harvesterhci.io/vm-dhcp-controller=agent', resourceVersion: list.metadata!.resourceVersion! },
      (type: string, pod: V1Pod) => {
        const old = oldUids.get(pod.metadata!.name!) === pod.metadata!.uid;
        if (old && (type === 'DELETED' || pod.metadata!.deletionTimestamp)) log.push(`delete ${pod.metadata!.name}`);
        if (!old && type === 'ADDED') log.push(`create ${pod.metadata!.name}`);
      },
      () => undefined,
    );
    try {
      await setControllerImage(apps, NEW);
      const after = await readUntil(
        'the unheld pools run new agents',
        () => Promise.all([1, 2, 3].map((i) => pool(custom, `net-${i}`))),
        (ps) =>
          ps
            .slice(0, 2)
            .every(
              (p) =>
                p.status.agentPodRef.image === NEW &&
                p.status.agentPodRef.uid !== undefined &&
                allTrue(p) &&
                oldUids.get(p.status.agentPodRef.name) !== p.status.agentPodRef.uid,
            ),
      );
      for (const p of after.slice(0, 2)) {
        const agent = await core.readNamespacedPod({ name: p.status.agentPodRef.name, namespace: NS });
        expect(agent.metadata!.uid).toBe(p.status.agentPodRef.uid);
        expect(agent.spec!.containers[0]!.image).toBe(NEW);
        expect(agent.spec!.initContainers![0]!.image).toBe(NEW);
      }
      // Held: same agent, same image in the ref.
      expect(after[2].status.agentPodRef).toEqual(before[2].status.agentPodRef);
      const held = await core.readNamespacedPod({ name: 'default-net-3-agent', namespace: NS });
      expect(held.metadata!.uid).toBe(before[2].status.agentPodRef.uid);
      expect(held.spec!.containers[0]!.image).toBe(OLD);
      // All at once: both unheld agents were deleted before either was recreated.
      const firstCreate = log.findIndex((e) => e.startsWith('create'));
      expect([...new Set(log.slice(0, firstCreate).filter((e) => e.startsWith('delete')))].sort()).toEqual([
        'delete default-net-1-agent',
        'delete default-net-2-agent',
      ]);
      expect(log.some((e) => e.includes('net-3'))).toBe(false);
    } finally {
      watch.abort();
    }

    // Releasing the hold lets the next sync upgrade it too.
    await custom.patchNamespacedCustomObject({ ...POOL, name: 'net-3', body: { metadata: { annotations: { [HOLD]: null } } } }, mergePatch);
    await readUntil(
      'the released pool runs the new agent',
      () => pool(custom, 'net-3'),
      (p) => p.status.agentPodRef.image === NEW && allTrue(p),
    );
  });

  it('creates a missing agent with the controller image, shaped as upstream builds it, and records it in status', async () => {
    const { core, custom } = await start('pools=1,upstream=vm-dhcp');
    await custom.createNamespacedCustomObject({
      group: 'k8s.cni.cncf.io',
      version: 'v1',
      plural: 'network-attachment-definitions',
      namespace: 'default',
      body: {
        apiVersion: 'k8s.cni.cncf.io/v1',
        kind: 'NetworkAttachmentDefinition',
        metadata: { name: 'vlan7', labels: { 'network.harvesterhci.io/clusternetwork': 'mgmt' } },
        spec: { config: '{}' },
      },
    });
    await custom.createNamespacedCustomObject({
      ...POOL,
      body: {
        apiVersion: 'network.harvesterhci.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: 'vlan7' },
        spec: {
          ipv4Config: { cidr: '10.7.0.0/24', serverIP: '10.7.0.2', router: '10.7.0.1', pool: { start: '10.7.0.10', end: '10.7.0.19' } },
          networkName: 'default/vlan7',
        },
      },
    });
    const p = await readUntil('the new pool has a Ready agent', () => pool(custom, 'vlan7'), allTrue);
    expect(p.status.agentPodRef).toEqual({ namespace: NS, name: 'default-vlan7-agent', image: OLD, uid: expect.any(String) });
    expect(p.metadata.finalizers).toContain('wrangler.cattle.io/vm-dhcp-ippool-controller');
    expect(p.status.ipv4).toEqual({ used: 0, available: 10 });
    expect(condition(p, 'Stopped')?.status).toBe('False');
    const agent = await core.readNamespacedPod({ name: 'default-vlan7-agent', namespace: NS });
    expect(agent.metadata!.uid).toBe(p.status.agentPodRef.uid);
    expect(agent.metadata!.labels).toEqual({
      'network.harvesterhci.io/vm-dhcp-controller': 'agent',
      'network.harvesterhci.io/ippool-namespace': 'default',
      'network.harvesterhci.io/ippool-name': 'vlan7',
    });
    expect(JSON.parse(agent.metadata!.annotations!['k8s.v1.cni.cncf.io/networks']!)).toEqual([{ namespace: 'default', name: 'vlan7', interface: 'eth1' }]);
    expect(agent.spec!.serviceAccountName).toBe(`${CONTROLLER}-agent`);
    expect(agent.spec!.containers[0]!.args).toEqual(['--ippool-ref', 'default/vlan7']);
    expect(agent.spec!.initContainers![0]!.command![2]).toContain('ip address add 10.7.0.2/24 dev eth1');
    expect(agent.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms[0]!.matchExpressions![0]).toEqual({
      key: 'network.harvesterhci.io/mgmt',
      operator: 'In',
      values: ['true'],
    });
    const nad = await custom.getNamespacedCustomObject({
      group: 'k8s.cni.cncf.io',
      version: 'v1',
      plural: 'network-attachment-definitions',
      namespace: 'default',
      name: 'vlan7',
    });
    expect(nad.metadata.labels).toMatchObject({ 'network.harvesterhci.io/ippool-namespace': 'default', 'network.harvesterhci.io/ippool-name': 'vlan7' });

    // A deleted agent comes back under the same name with a new uid (the monitor and register loops).
    await core.deleteNamespacedPod({ name: 'default-vlan7-agent', namespace: NS });
    const back = await readUntil(
      'the agent is redeployed',
      () => pool(custom, 'vlan7'),
      (x) => x.status.agentPodRef.uid !== p.status.agentPodRef.uid && allTrue(x),
    );
    expect((await core.readNamespacedPod({ name: 'default-vlan7-agent', namespace: NS })).metadata!.uid).toBe(back.status.agentPodRef.uid);

    // Deleting the pool removes its agent, then the finalizer.
    await custom.deleteNamespacedCustomObject({ ...POOL, name: 'vlan7' });
    await readUntil(
      'the pool is gone',
      () => custom.listNamespacedCustomObject({ ...POOL }),
      (l: any) => !l.items.some((x: any) => x.metadata.name === 'vlan7'),
    );
    const agents = await core.listNamespacedPod({ namespace: NS, labelSelector: 'network.harvesterhci.io/ippool-name=vlan7' });
    expect(agents.items.filter((a) => !a.metadata!.deletionTimestamp)).toEqual([]);
  });

  it('reports a failing loop on its condition with reason Error and the upstream message', async () => {
    const { custom } = await start('pools=1,upstream=vm-dhcp');
    await custom.createNamespacedCustomObject({
      group: 'k8s.cni.cncf.io',
      version: 'v1',
      plural: 'network-attachment-definitions',
      namespace: 'default',
      body: { apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', metadata: { name: 'bare' }, spec: { config: '{}' } },
    });
    await custom.createNamespacedCustomObject({
      ...POOL,
      body: {
        apiVersion: 'network.harvesterhci.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: 'bare' },
        spec: { ipv4Config: { cidr: '10.8.0.0/24', serverIP: '10.8.0.2', pool: { start: '10.8.0.10', end: '10.8.0.20' } }, networkName: 'default/bare' },
      },
    });
    const p = await readUntil(
      'Registered and AgentReady are False',
      () => pool(custom, 'bare'),
      (x) => condition(x, 'Registered')?.status === 'False' && condition(x, 'AgentReady')?.status === 'False',
    );
    expect(condition(p, 'Registered')).toMatchObject({ reason: 'Error', message: 'could not find clusternetwork for nad default/bare' });
    expect(condition(p, 'AgentReady')).toMatchObject({ reason: 'Error', message: 'agent for ippool default/bare is not deployed' });
    expect(condition(p, 'CacheReady')?.status).toBe('True');
    expect(p.status.agentPodRef).toBeUndefined();
  });

  it('--no-agent leaves agents alone: no recreation on an image bump, no replacement of a deleted agent', async () => {
    const { core, apps, custom } = await start('pools=2,upstream=vm-dhcp:no-agent');
    const d = await apps.readNamespacedDeployment({ name: CONTROLLER, namespace: NS });
    expect(d.spec!.template.spec!.containers[0]!.args).toContain('--no-agent');
    const before = await readUntil(
      'the pools are reconciled',
      () => Promise.all([1, 2].map((i) => pool(custom, `net-${i}`))),
      (ps) => ps.every((p) => p.metadata.finalizers?.length && allTrue(p)),
    );
    await setControllerImage(apps, NEW);
    await core.deleteNamespacedPod({ name: 'default-net-2-agent', namespace: NS, gracePeriodSeconds: 0 });
    // The restarted controller has re-listed every pool (its IPAM rebuilt: CacheReady flips False and back to True).
    await readUntil(
      'the restarted controller settled',
      async () => {
        await sim!.behaviour!.idle();
        return Promise.all([1, 2].map((i) => pool(custom, `net-${i}`)));
      },
      (ps) => ps.every(allTrue),
    );
    await sim!.behaviour!.idle();
    const after = await Promise.all([1, 2].map((i) => pool(custom, `net-${i}`)));
    expect(after.map((p) => p.status.agentPodRef)).toEqual(before.map((p) => p.status.agentPodRef));
    const agent1 = await core.readNamespacedPod({ name: 'default-net-1-agent', namespace: NS });
    expect(agent1.metadata!.uid).toBe(before[0].status.agentPodRef.uid);
    expect(agent1.spec!.containers[0]!.image).toBe(OLD);
    const remaining = await core.listNamespacedPod({ namespace: NS, labelSelector: 'network.harvesterhci.io/ippool-name=net-2' });
    expect(remaining.items).toEqual([]);
  });

  it('the monitor purges an agent whose uid differs from the ref, and register deploys a new one (installed through SimulatorOptions.upstream)', async () => {
    sim = await startSimulator({
      fleet: 'pools=1',
      upstream: { vmDhcp: {} },
      delays: { ...zeroDelays, podTerminateMs: 5, controllerMs: 1 },
      upstreamTiming: { vmDhcp: { retryMaxMs: 50 } },
    });
    const core = sim.kubeConfig.makeApiClient(CoreV1Api);
    const custom = sim.kubeConfig.makeApiClient(CustomObjectsApi);
    const p = await readUntil('the pool is registered', () => pool(custom, 'net-1'), allTrue);
    const original = p.status.agentPodRef.uid;
    const bogus = '00000000-0000-0000-0000-000000000000';
    await custom.patchNamespacedCustomObjectStatus({ ...POOL, name: 'net-1', body: { status: { agentPodRef: { uid: bogus } } } }, mergePatch);
    const after = await readUntil(
      'a new agent is recorded',
      () => pool(custom, 'net-1'),
      (x) => ![original, bogus].includes(x.status.agentPodRef.uid) && allTrue(x),
    );
    const agent = await core.readNamespacedPod({ name: 'default-net-1-agent', namespace: NS });
    expect(agent.metadata!.uid).toBe(after.status.agentPodRef.uid);
    expect(after.status.agentPodRef).toMatchObject({ namespace: NS, name: 'default-net-1-agent', image: OLD });
  });
});

describe("the controller's own rolling update and its releases", () => {
  const leaseHolder = async (sim: Simulator) =>
    sim.store.get(sim.store.resourceType('coordination.k8s.io', 'leases')!, 'kube-system', 'vm-dhcp-controllers')?.spec?.holderIdentity;
  const controllerPods = (sim: Simulator) =>
    sim.store.list(sim.store.resourceType('', 'pods')!, NS).filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === 'controller');

  it('the old pod keeps leading, and recreating agents with the old --image, until the new pod takes the lease', async () => {
    sim = await startSimulator({
      fleet: 'pools=1,nodes=1,upstream=vm-dhcp',
      delays: { ...zeroDelays, podReadyMs: 400, podTerminateMs: 5, controllerMs: 1 },
      upstreamTiming: { vmDhcp: { retryMaxMs: 50 } },
    });
    const s = sim;
    const core = s.kubeConfig.makeApiClient(CoreV1Api);
    const apps = s.kubeConfig.makeApiClient(AppsV1Api);
    const custom = s.kubeConfig.makeApiClient(CustomObjectsApi);
    const oldLeader = await readUntil(
      'a leader',
      () => leaseHolder(s),
      (h) => h !== undefined,
    );
    expect(controllerPods(s).map((p) => p.metadata.name)).toEqual([oldLeader]);
    await setControllerImage(apps, NEW);
    // The new pod starts beside the old one (maxSurge 1, maxUnavailable 0); until it is Ready the old pod leads.
    await readUntil(
      'a second controller pod',
      async () => controllerPods(s).length,
      (n) => n === 2,
    );
    await core.deleteNamespacedPod({ name: 'default-net-1-agent', namespace: NS });
    const recreated = await readUntil(
      'the agent recreated',
      () => core.readNamespacedPod({ name: 'default-net-1-agent', namespace: NS }).catch(() => undefined),
      (p) => p !== undefined && p.metadata?.deletionTimestamp === undefined,
    );
    expect(await leaseHolder(s)).toBe(oldLeader);
    expect(recreated!.spec!.containers[0]!.image).toBe(OLD);
    // The old pod is scaled down, releases the lease, and the new one takes it: then the pool moves to NEW.
    const newLeader = await readUntil(
      'the new pod leads',
      () => leaseHolder(s),
      (h) => h !== oldLeader,
    );
    expect(controllerPods(s).some((p) => p.metadata.name === newLeader)).toBe(true);
    await readUntil(
      'the pool on the new image',
      () => pool(custom, 'net-1'),
      (p) => p.status.agentPodRef.image === NEW && allTrue(p),
    );
  });

  it('v0.2.1 has no hold and never refreshes a running agent: a new --image reaches only agents created afterwards', async () => {
    const { core, apps, custom } = await start('pools=2,upstream=vm-dhcp@v0.2.1');
    await readUntil(
      'registered',
      () => Promise.all(['net-1', 'net-2'].map((n) => pool(custom, n))),
      (ps) => ps.every(allTrue),
    );
    await setControllerImage(apps, NEW);
    await readUntil(
      'the new controller leads',
      async () => controllerPods(sim!),
      (pods) => pods.length === 1 && pods[0]!.spec.containers[0].args.includes(NEW),
    );
    await sim!.behaviour!.idle();
    for (const name of ['net-1', 'net-2']) expect((await pool(custom, name)).status.agentPodRef.image).toBe(OLD);
    await core.deleteNamespacedPod({ name: 'default-net-2-agent', namespace: NS });
    await readUntil(
      'the agent gone',
      () =>
        core.readNamespacedPod({ name: 'default-net-2-agent', namespace: NS }).then(
          () => false,
          () => true,
        ),
      (gone) => gone,
    );
    // v0.2.1 does not wait for a terminating agent, so nothing re-queues the pool once its agent is gone: its next sync
    // (here: any change of the pool) recreates it.
    await custom.patchNamespacedCustomObject({ ...POOL, name: 'net-2', body: { metadata: { labels: { touched: 'yes' } } } }, mergePatch);
    await readUntil(
      'net-2 recreated on the new image',
      () => pool(custom, 'net-2'),
      (p) => p.status.agentPodRef.image === NEW && allTrue(p),
    );
    expect((await pool(custom, 'net-1')).status.agentPodRef.image).toBe(OLD);
  });

  it('before v1.5.0 an --image without exactly one colon stops the controller; v1.5.0 on reads it as :latest', async () => {
    const legacy = await start('pools=1,upstream=vm-dhcp');
    await setControllerImage(legacy.apps, 'rancher/harvester-vm-dhcp-agent');
    await readUntil(
      'the new controller pod alone',
      async () => controllerPods(sim!),
      (pods) => pods.length === 1 && pods[0]!.spec.containers[0].args.includes('rancher/harvester-vm-dhcp-agent'),
    );
    await legacy.core.deleteNamespacedPod({ name: 'default-net-1-agent', namespace: NS });
    await readUntil(
      'the agent gone',
      () =>
        legacy.core.readNamespacedPod({ name: 'default-net-1-agent', namespace: NS }).then(
          () => false,
          () => true,
        ),
      (gone) => gone,
    );
    await legacy.custom.patchNamespacedCustomObject({ ...POOL, name: 'net-1', body: { metadata: { labels: { touched: 'yes' } } } }, mergePatch);
    await sim!.behaviour!.idle();
    // The process exited ("Error parse agent image name"): nobody recreates the agent.
    await expect(legacy.core.readNamespacedPod({ name: 'default-net-1-agent', namespace: NS })).rejects.toMatchObject({ code: 404 });
    await sim!.stop();

    const current = await start('pools=1,upstream=vm-dhcp@v1.8.1');
    await setControllerImage(current.apps, 'rancher/harvester-vm-dhcp-agent');
    await readUntil(
      'the agent on :latest',
      () => pool(current.custom, 'net-1'),
      (p) => p.status.agentPodRef.image === 'rancher/harvester-vm-dhcp-agent:latest' && allTrue(p),
    );
  });
});
