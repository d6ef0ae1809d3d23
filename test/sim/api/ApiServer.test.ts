import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type KubernetesObject,
  type V1Deployment,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { expectStatus } from '../apiHelpers.js';

let sim: Simulator;
let core: CoreV1Api;
let apps: AppsV1Api;
let coordination: CoordinationV1Api;
let rbac: RbacAuthorizationV1Api;
let custom: CustomObjectsApi;

beforeAll(async () => {
  sim = await startSimulator({ behaviour: false });
  core = sim.kubeConfig.makeApiClient(CoreV1Api);
  apps = sim.kubeConfig.makeApiClient(AppsV1Api);
  coordination = sim.kubeConfig.makeApiClient(CoordinationV1Api);
  rbac = sim.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  custom = sim.kubeConfig.makeApiClient(CustomObjectsApi);
});

afterAll(async () => {
  await sim?.stop();
});

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** An IPPool spec the upstream CRD schema accepts. */
const VALID_IPPOOL_SPEC = {
  networkName: 'default/net-1',
  ipv4Config: { cidr: '10.0.0.0/24', serverIP: '10.0.0.2', pool: { start: '10.0.0.10', end: '10.0.0.250' } },
};
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

function deployment(name: string, image = 'nginx:1'): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            { name: 'main', image },
            { name: 'sidecar', image: 'envoy:1', env: [{ name: 'A', value: '1' }] },
          ],
        },
      },
    },
  };
}

async function getJson(path: string): Promise<any> {
  const response = await fetch(sim.url + path);
  expect(response.status).toBe(200);
  return response.json();
}

describe('discovery', () => {
  it('lists the core resources with their status subresources', async () => {
    const list = await getJson('/api/v1');
    const names = list.resources.map((r: any) => r.name);
    expect(names).toEqual(
      expect.arrayContaining(['pods', 'pods/status', 'nodes', 'namespaces', 'services', 'secrets', 'configmaps', 'events', 'serviceaccounts']),
    );
    const pods = list.resources.find((r: any) => r.name === 'pods');
    expect(pods).toMatchObject({ kind: 'Pod', namespaced: true, verbs: expect.arrayContaining(['get', 'list', 'watch', 'patch']) });
  });

  it('serves the custom groups with kinds, scope and short names', async () => {
    const groups = await getJson('/apis');
    expect(groups.groups.map((g: any) => g.name)).toEqual(
      expect.arrayContaining([
        'apps',
        'coordination.k8s.io',
        'k8s.cni.cncf.io',
        'network.harvesterhci.io',
        'tenancy.x-k8s.io',
        'rbac.authorization.k8s.io',
        'monitoring.coreos.com',
      ]),
    );
    const harvester = await getJson('/apis/network.harvesterhci.io/v1alpha1');
    expect(harvester.resources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'ippools', kind: 'IPPool', namespaced: true, shortNames: ['ippl', 'ippls'] }),
        expect.objectContaining({ name: 'ippools/status' }),
      ]),
    );
    const tenancy = await getJson('/apis/tenancy.x-k8s.io/v1alpha1');
    const byName = Object.fromEntries(tenancy.resources.map((r: any) => [r.name, r]));
    expect(byName.virtualclusters).toMatchObject({ kind: 'VirtualCluster', namespaced: true, shortNames: ['vc'] });
    expect(byName.clusterversions).toMatchObject({ kind: 'ClusterVersion', namespaced: false, shortNames: ['cv'] });
    expect(byName['virtualclusters/status']).toBeUndefined();
  });

  it('answers unknown paths with a NotFound Status', async () => {
    const response = await fetch(`${sim.url}/apis/nope.example.com/v1/things`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 });
  });
});

describe('CRUD through client-node', () => {
  interface Case {
    name: string;
    create: () => Promise<any>;
    read: () => Promise<any>;
    replace: (object: any) => Promise<any>;
    list: () => Promise<any>;
    remove: () => Promise<unknown>;
  }
  const ns = 'default';
  const meta = (name: string) => ({ name, namespace: ns, labels: { crud: 'yes' } });
  const cases: Case[] = [
    {
      name: 'namespaces',
      create: () => core.createNamespace({ body: { metadata: { name: 'crud-ns' } } }),
      read: () => core.readNamespace({ name: 'crud-ns' }),
      replace: (o) => core.replaceNamespace({ name: 'crud-ns', body: o }),
      list: () => core.listNamespace(),
      remove: () => core.deleteNamespace({ name: 'crud-ns' }),
    },
    {
      name: 'nodes',
      create: () => core.createNode({ body: { metadata: { name: 'crud-node' } } }),
      read: () => core.readNode({ name: 'crud-node' }),
      replace: (o) => core.replaceNode({ name: 'crud-node', body: o }),
      list: () => core.listNode(),
      remove: () => core.deleteNode({ name: 'crud-node' }),
    },
    {
      name: 'pods',
      create: () => core.createNamespacedPod({ namespace: ns, body: { metadata: meta('crud-pod'), spec: { containers: [{ name: 'c', image: 'busybox' }] } } }),
      read: () => core.readNamespacedPod({ name: 'crud-pod', namespace: ns }),
      replace: (o) => core.replaceNamespacedPod({ name: 'crud-pod', namespace: ns, body: o }),
      list: () => core.listNamespacedPod({ namespace: ns }),
      remove: () => core.deleteNamespacedPod({ name: 'crud-pod', namespace: ns }),
    },
    {
      name: 'services',
      create: () => core.createNamespacedService({ namespace: ns, body: { metadata: meta('crud-svc'), spec: { ports: [{ port: 80 }] } } }),
      read: () => core.readNamespacedService({ name: 'crud-svc', namespace: ns }),
      replace: (o) => core.replaceNamespacedService({ name: 'crud-svc', namespace: ns, body: o }),
      list: () => core.listNamespacedService({ namespace: ns }),
      remove: () => core.deleteNamespacedService({ name: 'crud-svc', namespace: ns }),
    },
    {
      name: 'secrets',
      create: () => core.createNamespacedSecret({ namespace: ns, body: { metadata: meta('crud-secret'), stringData: { a: 'b' } } }),
      read: () => core.readNamespacedSecret({ name: 'crud-secret', namespace: ns }),
      replace: (o) => core.replaceNamespacedSecret({ name: 'crud-secret', namespace: ns, body: o }),
      list: () => core.listNamespacedSecret({ namespace: ns }),
      remove: () => core.deleteNamespacedSecret({ name: 'crud-secret', namespace: ns }),
    },
    {
      name: 'configmaps',
      create: () => core.createNamespacedConfigMap({ namespace: ns, body: { metadata: meta('crud-cm'), data: { a: 'b' } } }),
      read: () => core.readNamespacedConfigMap({ name: 'crud-cm', namespace: ns }),
      replace: (o) => core.replaceNamespacedConfigMap({ name: 'crud-cm', namespace: ns, body: o }),
      list: () => core.listNamespacedConfigMap({ namespace: ns }),
      remove: () => core.deleteNamespacedConfigMap({ name: 'crud-cm', namespace: ns }),
    },
    {
      name: 'events',
      create: () =>
        core.createNamespacedEvent({
          namespace: ns,
          body: { metadata: meta('crud-ev'), involvedObject: { kind: 'Pod', name: 'x' }, reason: 'Test', message: 'hi' },
        }),
      read: () => core.readNamespacedEvent({ name: 'crud-ev', namespace: ns }),
      replace: (o) => core.replaceNamespacedEvent({ name: 'crud-ev', namespace: ns, body: o }),
      list: () => core.listNamespacedEvent({ namespace: ns }),
      remove: () => core.deleteNamespacedEvent({ name: 'crud-ev', namespace: ns }),
    },
    {
      name: 'serviceaccounts',
      create: () => core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: meta('crud-sa') } }),
      read: () => core.readNamespacedServiceAccount({ name: 'crud-sa', namespace: ns }),
      replace: (o) => core.replaceNamespacedServiceAccount({ name: 'crud-sa', namespace: ns, body: o }),
      list: () => core.listNamespacedServiceAccount({ namespace: ns }),
      remove: () => core.deleteNamespacedServiceAccount({ name: 'crud-sa', namespace: ns }),
    },
    {
      name: 'leases',
      create: () =>
        coordination.createNamespacedLease({ namespace: ns, body: { metadata: meta('crud-lease'), spec: { holderIdentity: 'me', leaseDurationSeconds: 15 } } }),
      read: () => coordination.readNamespacedLease({ name: 'crud-lease', namespace: ns }),
      replace: (o) => coordination.replaceNamespacedLease({ name: 'crud-lease', namespace: ns, body: o }),
      list: () => coordination.listNamespacedLease({ namespace: ns }),
      remove: () => coordination.deleteNamespacedLease({ name: 'crud-lease', namespace: ns }),
    },
    {
      name: 'deployments',
      create: () => apps.createNamespacedDeployment({ namespace: ns, body: { ...deployment('crud-deploy'), metadata: meta('crud-deploy') } }),
      read: () => apps.readNamespacedDeployment({ name: 'crud-deploy', namespace: ns }),
      replace: (o) => apps.replaceNamespacedDeployment({ name: 'crud-deploy', namespace: ns, body: o }),
      list: () => apps.listNamespacedDeployment({ namespace: ns }),
      remove: () => apps.deleteNamespacedDeployment({ name: 'crud-deploy', namespace: ns }),
    },
    {
      name: 'replicasets',
      create: () => apps.createNamespacedReplicaSet({ namespace: ns, body: { metadata: meta('crud-rs'), spec: { selector: { matchLabels: { a: 'b' } } } } }),
      read: () => apps.readNamespacedReplicaSet({ name: 'crud-rs', namespace: ns }),
      replace: (o) => apps.replaceNamespacedReplicaSet({ name: 'crud-rs', namespace: ns, body: o }),
      list: () => apps.listNamespacedReplicaSet({ namespace: ns }),
      remove: () => apps.deleteNamespacedReplicaSet({ name: 'crud-rs', namespace: ns }),
    },
    {
      name: 'daemonsets',
      create: () =>
        apps.createNamespacedDaemonSet({ namespace: ns, body: { metadata: meta('crud-ds'), spec: { selector: { matchLabels: { a: 'b' } }, template: {} } } }),
      read: () => apps.readNamespacedDaemonSet({ name: 'crud-ds', namespace: ns }),
      replace: (o) => apps.replaceNamespacedDaemonSet({ name: 'crud-ds', namespace: ns, body: o }),
      list: () => apps.listNamespacedDaemonSet({ namespace: ns }),
      remove: () => apps.deleteNamespacedDaemonSet({ name: 'crud-ds', namespace: ns }),
    },
    {
      name: 'statefulsets',
      create: () =>
        apps.createNamespacedStatefulSet({
          namespace: ns,
          body: { metadata: meta('crud-sts'), spec: { serviceName: 's', selector: { matchLabels: { a: 'b' } }, template: {} } },
        }),
      read: () => apps.readNamespacedStatefulSet({ name: 'crud-sts', namespace: ns }),
      replace: (o) => apps.replaceNamespacedStatefulSet({ name: 'crud-sts', namespace: ns, body: o }),
      list: () => apps.listNamespacedStatefulSet({ namespace: ns }),
      remove: () => apps.deleteNamespacedStatefulSet({ name: 'crud-sts', namespace: ns }),
    },
    {
      name: 'controllerrevisions',
      create: () => apps.createNamespacedControllerRevision({ namespace: ns, body: { metadata: meta('crud-cr'), revision: 1 } }),
      read: () => apps.readNamespacedControllerRevision({ name: 'crud-cr', namespace: ns }),
      replace: (o) => apps.replaceNamespacedControllerRevision({ name: 'crud-cr', namespace: ns, body: o }),
      list: () => apps.listNamespacedControllerRevision({ namespace: ns }),
      remove: () => apps.deleteNamespacedControllerRevision({ name: 'crud-cr', namespace: ns }),
    },
    {
      name: 'roles',
      create: () => rbac.createNamespacedRole({ namespace: ns, body: { metadata: meta('crud-role'), rules: [] } }),
      read: () => rbac.readNamespacedRole({ name: 'crud-role', namespace: ns }),
      replace: (o) => rbac.replaceNamespacedRole({ name: 'crud-role', namespace: ns, body: o }),
      list: () => rbac.listNamespacedRole({ namespace: ns }),
      remove: () => rbac.deleteNamespacedRole({ name: 'crud-role', namespace: ns }),
    },
    {
      name: 'clusterroles',
      create: () => rbac.createClusterRole({ body: { metadata: { name: 'system:crud-role' }, rules: [] } }),
      read: () => rbac.readClusterRole({ name: 'system:crud-role' }),
      replace: (o) => rbac.replaceClusterRole({ name: 'system:crud-role', body: o }),
      list: () => rbac.listClusterRole(),
      remove: () => rbac.deleteClusterRole({ name: 'system:crud-role' }),
    },
    ...(
      [
        // Each spec is one its CRD's schema accepts (the simulator applies the upstream schemas).
        ['k8s.cni.cncf.io', 'v1', 'network-attachment-definitions', 'NetworkAttachmentDefinition', true, { config: '{"cniVersion":"0.3.1","type":"bridge"}' }],
        ['network.harvesterhci.io', 'v1alpha1', 'ippools', 'IPPool', true, VALID_IPPOOL_SPEC],
        ['tenancy.x-k8s.io', 'v1alpha1', 'virtualclusters', 'VirtualCluster', true, { clusterVersionName: 'cv' }],
        ['tenancy.x-k8s.io', 'v1alpha1', 'clusterversions', 'ClusterVersion', false, { x: 1 }],
        ['monitoring.coreos.com', 'v1', 'servicemonitors', 'ServiceMonitor', true, { x: 1 }],
      ] as const
    ).map(([group, version, plural, kind, namespaced, spec]): Case => {
      const name = `crud-${plural}`;
      const body = { apiVersion: `${group}/${version}`, kind, metadata: { name, labels: { crud: 'yes' } }, spec };
      return namespaced
        ? {
            name: plural,
            create: () => custom.createNamespacedCustomObject({ group, version, plural, namespace: ns, body }),
            read: () => custom.getNamespacedCustomObject({ group, version, plural, namespace: ns, name }),
            replace: (o) => custom.replaceNamespacedCustomObject({ group, version, plural, namespace: ns, name, body: o }),
            list: () => custom.listNamespacedCustomObject({ group, version, plural, namespace: ns }),
            remove: () => custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name }),
          }
        : {
            name: plural,
            create: () => custom.createClusterCustomObject({ group, version, plural, body }),
            read: () => custom.getClusterCustomObject({ group, version, plural, name }),
            replace: (o) => custom.replaceClusterCustomObject({ group, version, plural, name, body: o }),
            list: () => custom.listClusterCustomObject({ group, version, plural }),
            remove: () => custom.deleteClusterCustomObject({ group, version, plural, name }),
          };
    }),
  ];

  it.each(cases)('creates, reads, lists, replaces and deletes $name', async (c) => {
    const created = await c.create();
    expect(created.metadata.uid).toMatch(/[0-9a-f-]{36}/);
    expect(created.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(created.metadata.creationTimestamp).toBeTruthy();

    const read = await c.read();
    expect(read.metadata.uid).toBe(created.metadata.uid);

    const list = await c.list();
    expect(list.items.map((i: any) => i.metadata.name)).toContain(created.metadata.name);
    expect(Number(list.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(created.metadata.resourceVersion));

    const changed = { ...read, metadata: { ...read.metadata, labels: { crud: 'changed' } } };
    const replaced = await c.replace(changed);
    expect(replaced.metadata.labels).toEqual({ crud: 'changed' });
    expect(Number(replaced.metadata.resourceVersion)).toBeGreaterThan(Number(read.metadata.resourceVersion));

    await c.remove();
    await expectStatus(c.read(), 404, 'NotFound');
  });
});

describe('errors', () => {
  it('answers a duplicate create with 409 AlreadyExists', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } });
    const status = await expectStatus(core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } }), 409, 'AlreadyExists');
    expect(status.details).toMatchObject({ name: 'dup', kind: 'configmaps' });
  });

  it('answers an update with a stale resourceVersion with 409 Conflict', async () => {
    const created = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'stale' }, data: { v: '1' } } });
    await core.replaceNamespacedConfigMap({ name: 'stale', namespace: 'default', body: { ...created, data: { v: '2' } } });
    const status = await expectStatus(
      core.replaceNamespacedConfigMap({ name: 'stale', namespace: 'default', body: { ...created, data: { v: '3' } } }),
      409,
      'Conflict',
    );
    expect(status.message).toContain('the object has been modified');
    expect((await core.readNamespacedConfigMap({ name: 'stale', namespace: 'default' })).data).toEqual({ v: '2' });
  });

  it('rejects an invalid name with 422 Invalid and a missing namespace with 404', async () => {
    await expectStatus(core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'Not_Valid' } } }), 422, 'Invalid');
    await expectStatus(core.createNamespacedConfigMap({ namespace: 'no-such-ns', body: { metadata: { name: 'x' } } }), 404, 'NotFound');
  });

  it('answers an unsupported verb with 405 MethodNotAllowed', async () => {
    const response = await fetch(`${sim.url}/api/v1/namespaces/default/configmaps`, { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(await response.json()).toMatchObject({ reason: 'MethodNotAllowed', code: 405 });
  });

  it('refuses pod spec changes other than images (422), as a real API server does', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'immutable' }, spec: { containers: [{ name: 'c', image: 'a:1' }] } } });
    await expectStatus(
      core.patchNamespacedPod(
        { name: 'immutable', namespace: 'default', body: { spec: { containers: [{ name: 'c', image: 'a:1', env: [{ name: 'X', value: '1' }] }] } } },
        merge,
      ),
      422,
      'Invalid',
    );
    const patched = await core.patchNamespacedPod(
      { name: 'immutable', namespace: 'default', body: [{ op: 'replace', path: '/spec/containers/0/image', value: 'a:2' }] },
      jsonPatch,
    );
    expect(patched.spec?.containers[0]?.image).toBe('a:2');
    const labelled = await core.patchNamespacedPod({ name: 'immutable', namespace: 'default', body: { metadata: { labels: { x: 'y' } } } }, merge);
    expect(labelled.metadata?.labels).toEqual({ x: 'y' });
  });

  it('refuses to create an object that carries a resourceVersion (400)', async () => {
    await expectStatus(
      core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'with-rv', resourceVersion: '5' } } }),
      400,
      'BadRequest',
    );
  });

  it('names generated objects from generateName', async () => {
    const a = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { generateName: 'gen-' } } });
    const b = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { generateName: 'gen-' } } });
    expect(a.metadata?.name).toMatch(/^gen-[a-z0-9]{5}$/);
    expect(b.metadata?.name).not.toBe(a.metadata?.name);
  });
});

describe('patch', () => {
  it('applies a JSON merge patch (null deletes)', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'mp', labels: { a: '1', b: '2' } }, data: { x: '1' } } });
    const patched = await core.patchNamespacedConfigMap(
      { name: 'mp', namespace: 'default', body: { metadata: { labels: { a: null, c: '3' } }, data: { y: '2' } } },
      merge,
    );
    expect(patched.metadata?.labels).toEqual({ b: '2', c: '3' });
    expect(patched.data).toEqual({ x: '1', y: '2' });
  });

  it('applies a JSON patch, and a failing test operation changes nothing (422)', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'jp' }, data: { x: '1' } } });
    const patched = await core.patchNamespacedConfigMap(
      {
        name: 'jp',
        namespace: 'default',
        body: [
          { op: 'test', path: '/data/x', value: '1' },
          { op: 'replace', path: '/data/x', value: '2' },
          { op: 'add', path: '/metadata/labels', value: { 'example.com/a_b': 'v' } },
        ],
      },
      jsonPatch,
    );
    expect(patched.data).toEqual({ x: '2' });
    expect(patched.metadata?.labels).toEqual({ 'example.com/a_b': 'v' });
    await expectStatus(
      core.patchNamespacedConfigMap(
        {
          name: 'jp',
          namespace: 'default',
          body: [
            { op: 'test', path: '/data/x', value: '1' },
            { op: 'remove', path: '/data/x' },
          ],
        },
        jsonPatch,
      ),
      422,
      'Invalid',
    );
    expect((await core.readNamespacedConfigMap({ name: 'jp', namespace: 'default' })).data).toEqual({ x: '2' });
  });

  it('merges containers and env by name in a strategic merge patch, and $patch: delete removes one', async () => {
    await apps.createNamespacedDeployment({ namespace: 'default', body: deployment('smp') });
    const patched = await apps.patchNamespacedDeployment(
      {
        name: 'smp',
        namespace: 'default',
        body: {
          spec: {
            template: {
              spec: {
                containers: [
                  { name: 'sidecar', env: [{ name: 'B', value: '2' }] },
                  { name: 'main', image: 'nginx:2' },
                ],
              },
            },
          },
        },
      },
      strategic,
    );
    const containers = patched.spec!.template.spec!.containers;
    expect(containers.map((c) => [c.name, c.image])).toEqual([
      ['main', 'nginx:2'],
      ['sidecar', 'envoy:1'],
    ]);
    expect(containers[1]!.env).toEqual([
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
    ]);
    expect(patched.metadata?.generation).toBe(2);

    const removed = await apps.patchNamespacedDeployment(
      { name: 'smp', namespace: 'default', body: { spec: { template: { spec: { containers: [{ name: 'sidecar', $patch: 'delete' }] } } } } },
      strategic,
    );
    expect(removed.spec!.template.spec!.containers.map((c) => c.name)).toEqual(['main']);
  });

  it('refuses a strategic merge patch on a custom resource (415), as Kubernetes does', async () => {
    const group = 'network.harvesterhci.io';
    await custom.createNamespacedCustomObject({
      group,
      version: 'v1alpha1',
      plural: 'ippools',
      namespace: 'default',
      body: { apiVersion: `${group}/v1alpha1`, kind: 'IPPool', metadata: { name: 'smp-pool' }, spec: VALID_IPPOOL_SPEC },
    });
    await expectStatus(
      custom.patchNamespacedCustomObject(
        { group, version: 'v1alpha1', plural: 'ippools', namespace: 'default', name: 'smp-pool', body: { spec: { paused: true } } },
        strategic,
      ),
      415,
      'UnsupportedMediaType',
    );
  });

  it('checks a resourceVersion carried in a patch (409 when stale)', async () => {
    const created = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'rvp' } } });
    await core.patchNamespacedConfigMap({ name: 'rvp', namespace: 'default', body: { data: { a: '1' } } }, merge);
    await expectStatus(
      core.patchNamespacedConfigMap(
        { name: 'rvp', namespace: 'default', body: { metadata: { resourceVersion: created.metadata!.resourceVersion }, data: { a: '2' } } },
        merge,
      ),
      409,
      'Conflict',
    );
  });
});

describe('server-side apply', () => {
  const cm = (data: Record<string, string>, labels?: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'ssa', namespace: 'default', ...(labels ? { labels } : {}) },
    data,
  });
  const applyAs = (manager: string, body: unknown, force = false) =>
    core.patchNamespacedConfigMap({ name: 'ssa', namespace: 'default', body, fieldManager: manager, force }, apply);

  it('requires a fieldManager (400)', async () => {
    await expectStatus(core.patchNamespacedConfigMap({ name: 'ssa', namespace: 'default', body: cm({ a: '1' }) }, apply), 400, 'BadRequest');
  });

  it('creates on first apply and records the manager’s fields', async () => {
    const created = await applyAs('alice', cm({ a: '1', b: '2' }, { team: 'x' }));
    expect(created.data).toEqual({ a: '1', b: '2' });
    const entry = (created.metadata?.managedFields ?? []).find((m) => m.manager === 'alice');
    expect(entry).toMatchObject({ operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1' });
    expect(entry!.fieldsV1).toEqual({ 'f:data': { 'f:a': {}, 'f:b': {} }, 'f:metadata': { 'f:labels': { 'f:team': {} } } });
  });

  it('refuses to change a field another manager owns without force, naming field and manager', async () => {
    const status = await expectStatus(applyAs('bob', cm({ a: 'bob' })), 409, 'Conflict');
    expect(status.details.causes).toEqual([
      expect.objectContaining({ reason: 'FieldManagerConflict', field: '.data.a', message: expect.stringContaining('"alice"') }),
    ]);
    expect((await core.readNamespacedConfigMap({ name: 'ssa', namespace: 'default' })).data).toEqual({ a: '1', b: '2' });
  });

  it('shares a field applied with the same value, and force moves ownership', async () => {
    const shared = await applyAs('bob', cm({ b: '2' }));
    const owners = (field: string, obj: any) =>
      obj.metadata.managedFields
        .filter((m: any) => Object.keys(m.fieldsV1['f:data'] ?? {}).includes(`f:${field}`))
        .map((m: any) => m.manager)
        .sort();
    expect(owners('b', shared)).toEqual(['alice', 'bob']);

    const forced = await applyAs('bob', cm({ a: 'bob', b: '2' }), true);
    expect(forced.data).toEqual({ a: 'bob', b: '2' });
    expect(owners('a', forced)).toEqual(['bob']);
  });

  it('removes fields a manager stops applying unless someone else owns them', async () => {
    // alice owned a (lost to bob), b (shared with bob) and label team (hers alone); she now applies only a new field.
    const result = await applyAs('alice', cm({ c: '3' }));
    expect(result.data).toEqual({ a: 'bob', b: '2', c: '3' });
    expect(result.metadata?.labels).toBeUndefined();
  });

  it('removes a list item a manager stops applying and keeps the others merged by key', async () => {
    const applyDeployment = (manager: string, containers: { name: string; image: string }[]) =>
      apps.patchNamespacedDeployment(
        {
          name: 'ssa-list',
          namespace: 'default',
          fieldManager: manager,
          body: {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'ssa-list' },
            spec: { selector: { matchLabels: { app: 'l' } }, template: { metadata: { labels: { app: 'l' } }, spec: { containers } } },
          },
        },
        apply,
      );
    await applyDeployment('alice', [
      { name: 'main', image: 'a:1' },
      { name: 'sidecar', image: 's:1' },
    ]);
    const both = await applyDeployment('bob', [{ name: 'extra', image: 'e:1' }]);
    expect(both.spec!.template.spec!.containers.map((c) => c.name)).toEqual(['main', 'sidecar', 'extra']);
    const status = await expectStatus(
      applyDeployment('bob', [
        { name: 'main', image: 'b:2' },
        { name: 'extra', image: 'e:1' },
      ]),
      409,
      'Conflict',
    );
    expect(status.details.causes[0].field).toBe('.spec.template.spec.containers[name="main"].image');
    const dropped = await applyDeployment('alice', [{ name: 'main', image: 'a:2' }]);
    expect(dropped.spec!.template.spec!.containers).toEqual([
      { name: 'main', image: 'a:2' },
      { name: 'extra', image: 'e:1' },
    ]);
  });

  it('tracks fields changed by plain updates, and apply conflicts with them', async () => {
    await core.patchNamespacedConfigMap({ name: 'ssa', namespace: 'default', body: { data: { c: 'edited' } }, fieldManager: 'editor' }, merge);
    const status = await expectStatus(applyAs('alice', cm({ c: '3' })), 409, 'Conflict');
    expect(status.details.causes[0].message).toContain('"editor"');
  });

  it('accepts a YAML apply body', async () => {
    const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-yaml\n  namespace: default\ndata:\n  greeting: hello\n';
    const response = await fetch(`${sim.url}/api/v1/namespaces/default/configmaps/ssa-yaml?fieldManager=yaml-writer`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/apply-patch+yaml' },
      body: yaml,
    });
    expect(response.status).toBe(201);
    expect((await core.readNamespacedConfigMap({ name: 'ssa-yaml', namespace: 'default' })).data).toEqual({ greeting: 'hello' });
  });

  it('applies to the status subresource without touching spec', async () => {
    await apps.createNamespacedDeployment({ namespace: 'default', body: deployment('ssa-status') });
    const applied = await apps.patchNamespacedDeploymentStatus(
      {
        name: 'ssa-status',
        namespace: 'default',
        body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ssa-status' }, spec: { replicas: 9 }, status: { replicas: 2, readyReplicas: 2 } },
        fieldManager: 'controller',
      },
      apply,
    );
    expect(applied.status).toMatchObject({ replicas: 2, readyReplicas: 2 });
    expect(applied.spec?.replicas).toBe(2);
  });
});

describe('status subresource', () => {
  it('updates status through /status and ignores status on the main resource', async () => {
    const created = await apps.createNamespacedDeployment({
      namespace: 'default',
      body: { ...deployment('status-dep'), status: { replicas: 99 } } as V1Deployment,
    });
    expect(created.status?.replicas).toBeUndefined();

    const statusUpdate = await apps.replaceNamespacedDeploymentStatus({
      name: 'status-dep',
      namespace: 'default',
      body: { ...created, spec: { ...created.spec!, replicas: 7 }, status: { replicas: 2, observedGeneration: 1 } },
    });
    expect(statusUpdate.status).toEqual({ replicas: 2, observedGeneration: 1 });
    expect(statusUpdate.spec?.replicas).toBe(2);
    expect(statusUpdate.metadata?.generation).toBe(1);

    const mainUpdate = await apps.replaceNamespacedDeployment({
      name: 'status-dep',
      namespace: 'default',
      body: { ...statusUpdate, spec: { ...statusUpdate.spec!, replicas: 3 }, status: { replicas: 0 } },
    });
    expect(mainUpdate.spec?.replicas).toBe(3);
    expect(mainUpdate.status).toEqual({ replicas: 2, observedGeneration: 1 });
    expect(mainUpdate.metadata?.generation).toBe(2);

    const patched = await apps.patchNamespacedDeploymentStatus({ name: 'status-dep', namespace: 'default', body: { status: { readyReplicas: 2 } } }, merge);
    expect(patched.status).toEqual({ replicas: 2, observedGeneration: 1, readyReplicas: 2 });
    expect(patched.metadata?.generation).toBe(2);
  });

  it('has no status subresource for VirtualCluster', async () => {
    const response = await fetch(`${sim.url}/apis/tenancy.x-k8s.io/v1alpha1/namespaces/default/virtualclusters/x/status`);
    expect(response.status).toBe(404);
  });
});

describe('dry run', () => {
  it('validates and answers dryRun=All writes without storing them or using a revision', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dry' }, data: { v: '1' } } });
    const revision = sim.store.currentRevision();
    const created = await core.createNamespacedConfigMap({ namespace: 'default', dryRun: 'All', body: { metadata: { name: 'dry-new' } } });
    expect(created.metadata?.name).toBe('dry-new');
    const patched = await core.patchNamespacedConfigMap({ name: 'dry', namespace: 'default', dryRun: 'All', body: { data: { v: '2' } } }, merge);
    expect(patched.data).toEqual({ v: '2' });
    await core.deleteNamespacedConfigMap({ name: 'dry', namespace: 'default', dryRun: 'All' });
    await expectStatus(core.createNamespacedConfigMap({ namespace: 'default', dryRun: 'All', body: { metadata: { name: 'dry' } } }), 409, 'AlreadyExists');
    expect(sim.store.currentRevision()).toBe(revision);
    await expectStatus(core.readNamespacedConfigMap({ name: 'dry-new', namespace: 'default' }), 404, 'NotFound');
    expect((await core.readNamespacedConfigMap({ name: 'dry', namespace: 'default' })).data).toEqual({ v: '1' });
  });
});

describe('scale subresource', () => {
  it('reads and patches replicas through /scale', async () => {
    await apps.createNamespacedDeployment({ namespace: 'default', body: deployment('scaled') });
    const scale = await apps.readNamespacedDeploymentScale({ name: 'scaled', namespace: 'default' });
    expect(scale).toMatchObject({ kind: 'Scale', spec: { replicas: 2 }, status: { selector: 'app=scaled' } });
    const patched = await apps.patchNamespacedDeploymentScale({ name: 'scaled', namespace: 'default', body: { spec: { replicas: 5 } } }, merge);
    expect(patched.spec?.replicas).toBe(5);
    const dep = await apps.readNamespacedDeployment({ name: 'scaled', namespace: 'default' });
    expect(dep.spec?.replicas).toBe(5);
    expect(dep.metadata?.generation).toBe(2);
    await expectStatus(
      apps.replaceNamespacedDeploymentScale({ name: 'scaled', namespace: 'default', body: { ...scale, spec: { replicas: 1 } } }),
      409,
      'Conflict',
    );
  });
});

describe('deletion', () => {
  it('keeps an object with finalizers, marked with deletionTimestamp, until the last finalizer goes', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'fin', finalizers: ['example.com/a', 'example.com/b'] } } });
    await core.deleteNamespacedConfigMap({ name: 'fin', namespace: 'default' });
    const terminating = await core.readNamespacedConfigMap({ name: 'fin', namespace: 'default' });
    expect(terminating.metadata?.deletionTimestamp).toBeTruthy();

    await expectStatus(
      core.patchNamespacedConfigMap(
        { name: 'fin', namespace: 'default', body: { metadata: { finalizers: ['example.com/a', 'example.com/b', 'example.com/new'] } } },
        merge,
      ),
      422,
      'Invalid',
    );
    await core.patchNamespacedConfigMap({ name: 'fin', namespace: 'default', body: { metadata: { finalizers: ['example.com/b'] } } }, merge);
    expect((await core.readNamespacedConfigMap({ name: 'fin', namespace: 'default' })).metadata?.finalizers).toEqual(['example.com/b']);
    await core.patchNamespacedConfigMap({ name: 'fin', namespace: 'default', body: [{ op: 'remove', path: '/metadata/finalizers' }] }, jsonPatch);
    await expectStatus(core.readNamespacedConfigMap({ name: 'fin', namespace: 'default' }), 404, 'NotFound');
  });

  it('keeps a bound pod Terminating for its grace period until a delete with grace 0', async () => {
    const pod = {
      metadata: { name: 'graceful' },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 20, containers: [{ name: 'c', image: 'busybox' }] },
    };
    await core.createNamespacedPod({ namespace: 'default', body: pod });
    await core.deleteNamespacedPod({ name: 'graceful', namespace: 'default' });
    const terminating = await core.readNamespacedPod({ name: 'graceful', namespace: 'default' });
    expect(terminating.metadata?.deletionGracePeriodSeconds).toBe(20);
    expect(terminating.metadata?.deletionTimestamp).toBeTruthy();
    await core.deleteNamespacedPod({ name: 'graceful', namespace: 'default', gracePeriodSeconds: 0 });
    await expectStatus(core.readNamespacedPod({ name: 'graceful', namespace: 'default' }), 404, 'NotFound');
  });

  it('deletes an unbound pod at once', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'unbound' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } });
    await core.deleteNamespacedPod({ name: 'unbound', namespace: 'default' });
    await expectStatus(core.readNamespacedPod({ name: 'unbound', namespace: 'default' }), 404, 'NotFound');
  });

  it('checks delete preconditions', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'pre' } } });
    await expectStatus(core.deleteNamespacedConfigMap({ name: 'pre', namespace: 'default', body: { preconditions: { uid: 'not-the-uid' } } }), 409, 'Conflict');
    await core.readNamespacedConfigMap({ name: 'pre', namespace: 'default' });
  });

  async function ownedChain(prefix: string) {
    const dep = await apps.createNamespacedDeployment({ namespace: 'default', body: deployment(prefix) });
    const owner = (o: any) => [{ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid, controller: true }];
    const rs = await apps.createNamespacedReplicaSet({
      namespace: 'default',
      body: {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: { name: `${prefix}-rs`, ownerReferences: owner(dep) },
        spec: { selector: { matchLabels: { app: prefix } } },
      },
    });
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `${prefix}-pod`, ownerReferences: owner(rs) },
        spec: { containers: [{ name: 'c', image: 'x' }] },
      },
    });
  }

  it.each(['Background', 'Foreground'])('deletes dependents by ownerReferences with propagationPolicy %s', async (policy) => {
    const prefix = `gc-${policy.toLowerCase()}`;
    await ownedChain(prefix);
    await apps.deleteNamespacedDeployment({ name: prefix, namespace: 'default', propagationPolicy: policy });
    await expectStatus(apps.readNamespacedReplicaSet({ name: `${prefix}-rs`, namespace: 'default' }), 404, 'NotFound');
    await expectStatus(core.readNamespacedPod({ name: `${prefix}-pod`, namespace: 'default' }), 404, 'NotFound');
  });

  it('orphans dependents with propagationPolicy Orphan', async () => {
    await ownedChain('gc-orphan');
    await apps.deleteNamespacedDeployment({ name: 'gc-orphan', namespace: 'default', propagationPolicy: 'Orphan' });
    const rs = await apps.readNamespacedReplicaSet({ name: 'gc-orphan-rs', namespace: 'default' });
    expect(rs.metadata?.ownerReferences).toBeUndefined();
    const pod = await core.readNamespacedPod({ name: 'gc-orphan-pod', namespace: 'default' });
    expect(pod.metadata?.ownerReferences?.[0]?.name).toBe('gc-orphan-rs');
  });
});

describe('selectors', () => {
  it('filters lists by label and field selectors', async () => {
    await core.createNamespace({ body: { metadata: { name: 'sel' } } });
    const pods: { name: string; labels: Record<string, string>; node: string }[] = [
      { name: 'a', labels: { tier: 'web', env: 'prod' }, node: 'n1' },
      { name: 'b', labels: { tier: 'web', env: 'dev' }, node: 'n2' },
      { name: 'c', labels: { tier: 'db' }, node: 'n1' },
    ];
    for (const p of pods) {
      await core.createNamespacedPod({
        namespace: 'sel',
        body: { metadata: { name: p.name, labels: p.labels }, spec: { nodeName: p.node, containers: [{ name: 'c', image: 'x' }] } },
      });
    }
    const names = async (labelSelector?: string, fieldSelector?: string) =>
      (await core.listNamespacedPod({ namespace: 'sel', ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) })).items
        .map((p) => p.metadata!.name)
        .sort();
    expect(await names('tier=web')).toEqual(['a', 'b']);
    expect(await names('tier==web,env!=prod')).toEqual(['b']);
    expect(await names('env in (prod,dev)')).toEqual(['a', 'b']);
    expect(await names('env notin (prod)')).toEqual(['b', 'c']);
    expect(await names('env')).toEqual(['a', 'b']);
    expect(await names('!env')).toEqual(['c']);
    expect(await names(undefined, 'spec.nodeName=n1')).toEqual(['a', 'c']);
    expect(await names('tier=web', 'spec.nodeName=n1')).toEqual(['a']);
    expect(await names(undefined, 'metadata.name=b')).toEqual(['b']);
    expect(await names(undefined, 'status.phase=Pending')).toEqual(['a', 'b', 'c']);
    expect((await core.listPodForAllNamespaces({ fieldSelector: 'metadata.namespace=sel' })).items).toHaveLength(3);
    await expectStatus(core.listNamespacedPod({ namespace: 'sel', fieldSelector: 'spec.unknown=x' }), 400, 'BadRequest');
  });
});

describe('generic client', () => {
  it('lets KubernetesObjectApi find kinds through discovery and apply server-side', async () => {
    const client = KubernetesObjectApi.makeApiClient(sim.kubeConfig);
    const pool = {
      apiVersion: 'network.harvesterhci.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: 'generic-pool', namespace: 'default' },
      spec: { networkName: 'default/net' },
    };
    const applied = (await client.patch(pool, undefined, undefined, 'generic', true, PatchStrategy.ServerSideApply)) as KubernetesObject;
    expect(applied.metadata?.uid).toBeTruthy();
    const read = await client.read<typeof pool>({ apiVersion: pool.apiVersion, kind: pool.kind, metadata: { name: 'generic-pool', namespace: 'default' } });
    expect(read.spec).toEqual({ networkName: 'default/net' });
    const list = await client.list('network.harvesterhci.io/v1alpha1', 'IPPool', 'default');
    expect(list.items.map((i) => i.metadata?.name)).toContain('generic-pool');
    await client.delete({ apiVersion: pool.apiVersion, kind: pool.kind, metadata: { name: 'generic-pool', namespace: 'default' } });
    await expectStatus(
      client.read({ apiVersion: pool.apiVersion, kind: pool.kind, metadata: { name: 'generic-pool', namespace: 'default' } }),
      404,
      'NotFound',
    );
  });
});

describe('startSimulator', () => {
  it('writes a kubeconfig for the rollplane-sim context and removes its temp dir on stop', async () => {
    const own = await startSimulator({ behaviour: false });
    const text = readFileSync(own.kubeconfigPath, 'utf8');
    expect(text).toContain(`server: ${own.url}`);
    expect(text).toContain('insecure-skip-tls-verify: true');
    expect(own.kubeConfig.getCurrentContext()).toBe('rollplane-sim');
    expect((await own.kubeConfig.makeApiClient(CoreV1Api).listNamespace()).items.length).toBeGreaterThan(0);
    await own.stop();
    expect(existsSync(dirname(own.kubeconfigPath))).toBe(false);
  });
});
