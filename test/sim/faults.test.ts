import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { zeroDelays } from '../../src/sim/behaviour/index.js';
import { AGENT_LABEL } from '../../src/sim/behaviour/upstream/vmDhcpChart.js';
import { FaultInjector } from '../../src/sim/faults.js';
import { AGENT_NAMESPACE, VC_NAMESPACE } from '../../src/sim/fleet.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { Resources } from '../../src/sim/store/resources.js';
import { expectStatus } from './apiHelpers.js';
import { until } from '../helpers/until.js';

let sim: Simulator;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sim-faults-'));
  sim = await startSimulator({ delays: zeroDelays, fleet: 'demo', kubeconfigPath: join(dir, 'kubeconfig'), faults: { latencyMs: { '*': 0 } } });
  core = sim.kubeConfig.makeApiClient(CoreV1Api);
  apps = sim.kubeConfig.makeApiClient(AppsV1Api);
  custom = sim.kubeConfig.makeApiClient(CustomObjectsApi);
});

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  sim.faults.set({});
  sim.api.hooks = sim.faults.hooks();
});

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${sim.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } }),
  });
  return { status: res.status, body: await res.json() };
}

describe('fault injection through the HTTP API', () => {
  it('error rate 1 fails every resource request with a Status: 500 InternalError, or 503 when configured', async () => {
    sim.faults.set({ errorRate: { '*': 1 } });
    await expectStatus(core.listNamespacedPod({ namespace: AGENT_NAMESPACE }), 500, 'InternalError');
    await expectStatus(core.readNode({ name: 'sim-node-1' }), 500, 'InternalError');
    sim.faults.set({ errorRate: { '*': 1 }, errorCode: 503 });
    await expectStatus(apps.listNamespacedDaemonSet({ namespace: 'confidential-containers-system' }), 503, 'ServiceUnavailable');
    expect(sim.faults.stats().errors).toBeGreaterThanOrEqual(3);
    sim.faults.set({});
    // The demo's three agents (the namespace also holds the vm-dhcp-controller's own pod).
    const pods = await core.listNamespacedPod({ namespace: AGENT_NAMESPACE, labelSelector: AGENT_LABEL });
    expect(pods.items.length).toBe(3);
  });

  it('error rates are per verb', async () => {
    sim.faults.set({ errorRate: { create: 1 } });
    await core.listNamespacedConfigMap({ namespace: 'default' });
    await expectStatus(
      core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'doomed' }, data: { a: '1' } } }),
      500,
      'InternalError',
    );
    expect(sim.store.get(Resources.configmaps, 'default', 'doomed')).toBeUndefined();
  });

  it('can limit faults to some resources', async () => {
    sim.faults.set({ errorRate: { '*': 1 }, resources: ['ippools.network.harvesterhci.io', 'configmaps'] });
    await core.listNamespacedPod({ namespace: AGENT_NAMESPACE });
    await expectStatus(core.listNamespacedConfigMap({ namespace: 'default' }), 500, 'InternalError');
    await expectStatus(
      custom.listNamespacedCustomObject({ group: 'network.harvesterhci.io', version: 'v1alpha1', namespace: 'default', plural: 'ippools' }),
      500,
      'InternalError',
    );
  });

  it('conflict rate 1 answers updates and patches with 409 Conflict, reads still work', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'contended' }, data: { a: '1' } } });
    sim.faults.set({ conflictRate: 1 });
    const cm = await core.readNamespacedConfigMap({ name: 'contended', namespace: 'default' });
    const body = await expectStatus(
      core.replaceNamespacedConfigMap({ name: 'contended', namespace: 'default', body: { ...cm, data: { a: '2' } } }),
      409,
      'Conflict',
    );
    expect(body.message).toContain('the object has been modified');
    await expectStatus(
      core.patchNamespacedConfigMap(
        { name: 'contended', namespace: 'default', body: { data: { a: '3' } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
      409,
      'Conflict',
    );
    expect(sim.store.get(Resources.configmaps, 'default', 'contended')!.data).toEqual({ a: '1' });
    expect(sim.faults.stats().conflicts).toBe(2);
  });

  it('latency holds a request until the injected delay has passed, for the configured verb only', async () => {
    const sleeps: { ms: number; release: () => void }[] = [];
    const injector = new FaultInjector({ latencyMs: { get: 250 } }, { sleep: (ms) => new Promise((release) => sleeps.push({ ms, release: () => release() })) });
    sim.api.hooks = injector.hooks();
    await core.listNode(); // list: no latency configured
    expect(sleeps).toHaveLength(0);
    let answered = false;
    const read = core.readNode({ name: 'sim-node-1' }).then((node) => {
      answered = true;
      return node;
    });
    await until('the request to start waiting', () => sleeps.length === 1, 5_000);
    expect(sleeps[0]!.ms).toBe(250);
    // A request sent after the held one has started waiting is answered, and the held one still is not.
    await core.listNode();
    expect(answered).toBe(false);
    sleeps[0]!.release();
    expect((await read).metadata?.name).toBe('sim-node-1');
    expect(injector.stats().delayed).toBe(1);
  });

  it('drops watch connections on demand and at an interval', async () => {
    const watch = new Watch(sim.kubeConfig);
    const open = () =>
      new Promise<{ ended: Promise<void> }>((resolve, reject) => {
        let end!: () => void;
        const ended = new Promise<void>((r) => (end = r));
        watch
          .watch(
            '/api/v1/namespaces/default/configmaps',
            {},
            () => undefined,
            () => end(),
          )
          .then(() => resolve({ ended }), reject);
      });
    const first = await open();
    await until('the watch to be open', () => sim.api.watchCount() >= 1, 5_000);
    const dropped = await admin('POST', '/sim/admin/watches/drop');
    expect(dropped.status).toBe(200);
    expect(dropped.body.dropped).toBeGreaterThanOrEqual(1);
    await first.ended;

    const put = await admin('PUT', '/sim/admin/faults', { dropWatchesEveryMs: 25 });
    expect(put.body.dropWatchesEveryMs).toBe(25);
    const second = await open();
    await second.ended; // ends by itself
    expect(sim.faults.stats().watchDrops).toBeGreaterThanOrEqual(2);
  });

  it('serves the admin endpoint: read, replace and validate the fault configuration', async () => {
    const initial = await admin('GET', '/sim/admin/faults');
    expect(initial.body).toEqual({ latencyMs: {}, errorRate: {}, errorCode: 500, conflictRate: 0, dropWatchesEveryMs: 0, dryRuns: true });
    const put = await admin('PUT', '/sim/admin/faults', { latencyMs: { list: 5 }, errorRate: { delete: 0.5 }, errorCode: 503 });
    expect(put.status).toBe(200);
    expect((await admin('GET', '/sim/admin/faults')).body).toMatchObject({ latencyMs: { list: 5 }, errorRate: { delete: 0.5 }, errorCode: 503 });
    const bad = await admin('PUT', '/sim/admin/faults', { errorRate: { '*': 2 }, surprise: true });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
    expect(bad.body.details.causes.length).toBeGreaterThanOrEqual(1);
    // A rejected configuration leaves the previous one in force.
    expect((await admin('GET', '/sim/admin/faults')).body.errorCode).toBe(503);
    expect((await admin('GET', '/sim/admin/nope')).status).toBe(404);
  });

  it('crashes and recovers a node through the admin endpoint', async () => {
    const agent = 'default-net-1-agent';
    const ready = async () =>
      (await core.readNamespacedPod({ name: agent, namespace: AGENT_NAMESPACE })).status?.conditions?.find((c) => c.type === 'Ready')?.status;
    const node = (await core.readNamespacedPod({ name: agent, namespace: AGENT_NAMESPACE })).spec!.nodeName!;
    const crashed = await admin('POST', `/sim/admin/nodes/${node}/crash`);
    expect(crashed.status).toBe(200);
    expect(crashed.body.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('Unknown');
    await until(
      'the agent to turn unready',
      () => sim.store.get(Resources.pods, AGENT_NAMESPACE, agent)?.status.conditions.find((c: { type: string }) => c.type === 'Ready').status === 'False',
      5_000,
    );
    expect(await ready()).toBe('False');

    await core.deleteNamespacedPod({ name: agent, namespace: AGENT_NAMESPACE });
    await sim.behaviour!.idle();
    const terminating = await core.readNamespacedPod({ name: agent, namespace: AGENT_NAMESPACE });
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    await core.deleteNamespacedPod({ name: agent, namespace: AGENT_NAMESPACE, gracePeriodSeconds: 0 });
    // The forced delete removes that pod at once. The demo's vm-dhcp-controller may already have created the pool's
    // agent again under the same name (as upstream does), so the name answers 404 or a new pod, never the old one.
    const after = await core.readNamespacedPod({ name: agent, namespace: AGENT_NAMESPACE }).catch((error: unknown) => error);
    if (after instanceof Error) await expectStatus(Promise.reject(after), 404, 'NotFound');
    else expect((after as { metadata?: { uid?: string } }).metadata?.uid).not.toBe(terminating.metadata?.uid);

    expect((await admin('POST', `/sim/admin/nodes/${node}/recover`)).status).toBe(200);
    expect((await core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const missing = await admin('POST', '/sim/admin/nodes/no-such-node/crash');
    expect(missing.status).toBe(404);
    expect(missing.body.reason).toBe('NotFound');
  });
});

describe('workload rollouts seen by kubectl', () => {
  it('kubectl rollout status succeeds for a control-plane StatefulSet after a template change', async () => {
    const vc = sim.store.list(Resources.virtualclusters, VC_NAMESPACE)[0]!;
    const ns = vc.status.clusterNamespace as string;
    const sts = await apps.readNamespacedStatefulSet({ name: 'apiserver', namespace: ns });
    sts.spec!.template.spec!.containers[0]!.image = 'virtualcluster/apiserver-v1.17.0';
    await apps.replaceNamespacedStatefulSet({ name: 'apiserver', namespace: ns, body: sts });
    const { stdout } = await promisify(execFile)(
      process.env.KUBECTL ?? 'kubectl',
      ['--kubeconfig', sim.kubeconfigPath, '--cache-dir', join(dir, 'cache'), 'rollout', 'status', 'statefulset/apiserver', '-n', ns, '--timeout=30s'],
      { timeout: 60_000 },
    );
    expect(stdout).toMatch(/partitioned roll out complete|rolling update complete/);
    const after = await apps.readNamespacedStatefulSet({ name: 'apiserver', namespace: ns });
    expect(after.status?.currentRevision).toBe(after.status?.updateRevision);
    expect((await core.readNamespacedPod({ name: 'apiserver-0', namespace: ns })).spec?.containers[0]?.image).toBe('virtualcluster/apiserver-v1.17.0');
  });
});
