import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { zeroDelays } from '../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { Resources } from '../../src/sim/store/resources.js';

const run = promisify(execFile);
const KUBECTL = process.env.KUBECTL ?? 'kubectl';

let sim: Simulator;
let dir: string;

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(KUBECTL, ['--kubeconfig', sim.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...args], {
    timeout: 60_000,
  });
  return stdout;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sim-kubectl-'));
  sim = await startSimulator({ delays: zeroDelays, kubeconfigPath: join(dir, 'kubeconfig') });
  sim.store.create(Resources.nodes, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-1' },
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  });
});

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// The IPPool is one the upstream CRD schema accepts; the second apply changes a mutable field (domainName).
const manifest = (image: string, domain: string) => `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: ${image}
        env: [{name: A, value: "1"}]
---
apiVersion: network.harvesterhci.io/v1alpha1
kind: IPPool
metadata:
  name: pool-a
  namespace: default
spec:
  networkName: default/net-a
  ipv4Config:
    cidr: 10.0.0.0/24
    serverIP: 10.0.0.2
    pool: {start: 10.0.0.10, end: 10.0.0.250}
    domainName: ${domain}
`;

describe('kubectl against the simulator', () => {
  it('creates with apply -f, then updates with a second apply', async () => {
    const file = join(dir, 'manifest.yaml');
    await writeFile(file, manifest('nginx:1', 'a.sim.local'));
    const first = await kubectl('apply', '-f', file);
    expect(first).toContain('deployment.apps/web created');
    expect(first).toContain('ippool.network.harvesterhci.io/pool-a created');

    await writeFile(file, manifest('nginx:2', 'b.sim.local'));
    const second = await kubectl('apply', '-f', file);
    expect(second).toContain('deployment.apps/web configured');
    expect(second).toContain('ippool.network.harvesterhci.io/pool-a configured');
    const dep = sim.store.get(Resources.deployments, 'default', 'web')!;
    expect(dep.spec.template.spec.containers[0].image).toBe('nginx:2');
    expect(dep.spec.template.spec.containers[0].env).toEqual([{ name: 'A', value: '1' }]);
    expect(sim.store.get(Resources.ippools, 'default', 'pool-a')!.spec.ipv4Config.domainName).toBe('b.sim.local');

    const unchanged = await kubectl('apply', '-f', file);
    expect(unchanged).toContain('deployment.apps/web unchanged');

    await writeFile(file, manifest('nginx:3', 'c.sim.local'));
    expect(await kubectl('apply', '--dry-run=server', '-f', file)).toContain('deployment.apps/web configured (server dry run)');
    expect(sim.store.get(Resources.deployments, 'default', 'web')!.spec.template.spec.containers[0].image).toBe('nginx:2');
  });

  it('waits for a rollout with rollout status', async () => {
    const out = await kubectl('rollout', 'status', 'deployment/web', '--timeout=30s');
    expect(out).toContain('successfully rolled out');
  });

  it('scales with scale, through the scale subresource', async () => {
    expect(await kubectl('scale', 'deployment', 'web', '--replicas=3')).toContain('scaled');
    expect(sim.store.get(Resources.deployments, 'default', 'web')!.spec.replicas).toBe(3);
    expect(await kubectl('rollout', 'status', 'deployment/web', '--timeout=30s')).toContain('successfully rolled out');
  });

  it('lists pods across namespaces with the usual columns and shows one as YAML', async () => {
    const pods = await kubectl('get', 'pods', '-A');
    expect(pods.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE/);
    expect(pods).toMatch(/web-\S+\s+1\/1\s+Running\s+0/);
    expect(await kubectl('get', 'deployment', 'web')).toMatch(/web\s+3\/3\s+3\s+3/);
    const podNames = sim.store.list(Resources.pods).map((p) => p.metadata.name);
    expect(podNames.length).toBeGreaterThanOrEqual(3);
    for (const name of podNames) expect(pods).toContain(name);

    const yaml = parseYaml(await kubectl('get', 'pod', podNames[0]!, '-n', 'default', '-o', 'yaml'));
    expect(yaml).toMatchObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: podNames[0], namespace: 'default' } });
    expect(yaml.spec.containers[0].image).toBe('nginx:2');

    expect(await kubectl('logs', podNames[0]!, '-n', 'default')).toContain('container main (image nginx:2) is running');
  });

  it('lists IPPools by plural and by short name', async () => {
    expect(await kubectl('get', 'ippools', '-A')).toMatch(/default\s+pool-a/);
    expect(await kubectl('get', 'ippl', '-A')).toMatch(/default\s+pool-a/);
  });

  it('applies server-side, reports a conflict with another manager, and takes over with --force-conflicts', async () => {
    const file = join(dir, 'ssa.yaml');
    const cm = (value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default}\ndata: {key: "${value}"}\n`;
    await writeFile(file, cm('one'));
    expect(await kubectl('apply', '--server-side', '-f', file)).toContain('configmap/ssa serverside-applied');
    await kubectl('patch', 'configmap', 'ssa', '--type=merge', '-p', '{"data":{"key":"edited"}}');
    await writeFile(file, cm('two'));
    const failure = await kubectl('apply', '--server-side', '-f', file).then(
      () => 'no error',
      (error: { stderr?: string }) => error.stderr ?? '',
    );
    expect(failure).toMatch(/conflict/i);
    expect(failure).toContain('.data.key');
    expect(await kubectl('apply', '--server-side', '--force-conflicts', '-f', file)).toContain('serverside-applied');
    expect(sim.store.get(Resources.configmaps, 'default', 'ssa')!.data).toEqual({ key: 'two' });
  });

  it('applies a typical service deployment manifest of many kinds', async () => {
    const file = join(dir, 'service.yaml');
    await writeFile(
      file,
      `
apiVersion: v1
kind: Namespace
metadata: {name: rollplane}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: rollplane, namespace: rollplane}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: rollplane}
rules: [{apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list", "watch", "patch"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: rollplane}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rollplane}
subjects: [{kind: ServiceAccount, name: rollplane, namespace: rollplane}]
---
apiVersion: v1
kind: Service
metadata: {name: rollplane, namespace: rollplane, labels: {app: rollplane}}
spec:
  selector: {app: rollplane}
  ports: [{name: http, port: 4000, targetPort: 4000}]
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: rollplane, namespace: rollplane}
spec:
  selector: {matchLabels: {app: rollplane}}
  endpoints: [{port: http, path: /metrics}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: rollplane, namespace: rollplane}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: rollplane}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: rollplane, namespace: rollplane}
spec: {podSelector: {matchLabels: {app: rollplane}}, policyTypes: [Ingress]}
`,
    );
    const out = await kubectl('apply', '-f', file);
    for (const name of [
      'namespace/rollplane',
      'serviceaccount/rollplane',
      'clusterrole.rbac.authorization.k8s.io/rollplane',
      'clusterrolebinding.rbac.authorization.k8s.io/rollplane',
      'service/rollplane',
      'servicemonitor.monitoring.coreos.com/rollplane',
      'poddisruptionbudget.policy/rollplane',
      'networkpolicy.networking.k8s.io/rollplane',
    ]) {
      expect(out).toContain(`${name} created`);
    }
    expect(await kubectl('apply', '-f', file)).not.toContain('created');
  });

  it('deletes with delete', async () => {
    const out = await kubectl('delete', 'ippool', 'pool-a', '-n', 'default');
    expect(out).toContain('deleted');
    expect(sim.store.get(Resources.ippools, 'default', 'pool-a')).toBeUndefined();
    await kubectl('delete', 'deployment', 'web', '-n', 'default');
    expect(sim.store.get(Resources.deployments, 'default', 'web')).toBeUndefined();
  });
});
