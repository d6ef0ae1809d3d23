import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPDATABLE_POD_SPEC_FIELDS } from '../../src/sim/admission/podUpdate.js';
import { Resources, SimApiError, startSimulator, type Simulator } from '../../src/sim/index.js';
import { zeroDelays } from '../../src/sim/behaviour/index.js';
import { nodeObject } from '../../src/sim/fleet.js';
import { expectStatus } from './apiHelpers.js';
import { until } from '../helpers/until.js';

// The admission kube-apiserver always runs, through client-node over HTTP: each rule with a good and a bad case side
// by side, the bad one asserting the code, reason, message and causes, and that nothing was written.

let sim: Simulator;
let core: CoreV1Api;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const NS = 'admission';

beforeAll(async () => {
  sim = await startSimulator({ behaviour: false });
  core = sim.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});

afterAll(async () => {
  await sim?.stop();
});

function pod(name: string, spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return { metadata: { name, namespace: NS }, spec: { containers: [{ name: 'main', image: 'busybox:1' }], ...spec } };
}

async function absent(read: Promise<unknown>): Promise<void> {
  await expectStatus(read, 404, 'NotFound');
}

describe('ServiceAccount admission', () => {
  it('gives a new namespace its default ServiceAccount, as the ServiceAccount controller does', async () => {
    await core.createNamespace({ body: { metadata: { name: 'fresh-ns' } } });
    const accounts = await core.listNamespacedServiceAccount({ namespace: 'fresh-ns' });
    expect(accounts.items.map((a) => a.metadata?.name)).toEqual(['default']);
  });

  it('defaults a pod to the default ServiceAccount', async () => {
    const created = await core.createNamespacedPod({ namespace: NS, body: pod('sa-default') });
    expect(created.spec?.serviceAccountName).toBe('default');
    expect(created.spec?.serviceAccount).toBe('default');
  });

  it('refuses a pod naming a ServiceAccount that does not exist (403), and admits it once the account exists', async () => {
    const body = pod('sa-missing', { serviceAccountName: 'agent' });
    const status = await expectStatus(core.createNamespacedPod({ namespace: NS, body }), 403, 'Forbidden');
    expect(status.message).toBe(`pods "sa-missing" is forbidden: error looking up service account ${NS}/agent: serviceaccount "agent" not found`);
    expect(status.details).toEqual({ name: 'sa-missing', group: '', kind: 'pods' });
    await absent(core.readNamespacedPod({ name: 'sa-missing', namespace: NS }));

    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'agent' }, imagePullSecrets: [{ name: 'regcred' }] } });
    const created = await core.createNamespacedPod({ namespace: NS, body });
    expect(created.spec?.serviceAccountName).toBe('agent');
    expect(created.spec?.imagePullSecrets).toEqual([{ name: 'regcred' }]);
  });

  it('refuses it in a dry run too', async () => {
    const body = pod('sa-dry', { serviceAccountName: 'nobody' });
    await expectStatus(core.createNamespacedPod({ namespace: NS, body, dryRun: 'All' }), 403, 'Forbidden');
    const dry = await core.createNamespacedPod({ namespace: NS, body: pod('sa-dry'), dryRun: 'All' });
    expect(dry.spec?.serviceAccountName).toBe('default');
    await absent(core.readNamespacedPod({ name: 'sa-dry', namespace: NS }));
  });

  it('applies to the writes simulated controllers make in-process', () => {
    const object = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'in-process', namespace: NS },
      spec: { serviceAccountName: 'ghost', containers: [{ name: 'c', image: 'x' }] },
    };
    expect(() => sim.store.create(Resources.pods, object)).toThrow(SimApiError);
    expect(() => sim.store.create(Resources.pods, object)).toThrow(`error looking up service account ${NS}/ghost: serviceaccount "ghost" not found`);
    expect(sim.store.get(Resources.pods, NS, 'in-process')).toBeUndefined();
  });
});

describe('Pod names', () => {
  it('accepts a DNS-1123 subdomain and refuses anything else with 422', async () => {
    await core.createNamespacedPod({ namespace: NS, body: pod('agent-1.pool-a') });
    const status = await expectStatus(core.createNamespacedPod({ namespace: NS, body: pod('Agent_1') }), 422, 'Invalid');
    const why =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    expect(status.message).toBe(`Pod "Agent_1" is invalid: metadata.name: Invalid value: "Agent_1": ${why}`);
    expect(status.details).toEqual({
      name: 'Agent_1',
      group: '',
      kind: 'Pod',
      causes: [{ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: "Agent_1": ${why}` }],
    });
    await absent(core.readNamespacedPod({ name: 'Agent_1', namespace: NS }));
  });
});

describe('Pod update immutability', () => {
  const FORBIDDEN = `pod updates may not change fields other than ${UPDATABLE_POD_SPEC_FIELDS.join(',')}`;

  async function fresh(name: string, spec: Partial<NonNullable<V1Pod['spec']>> = {}): Promise<V1Pod> {
    return core.createNamespacedPod({ namespace: NS, body: pod(name, { terminationGracePeriodSeconds: 30, ...spec }) });
  }

  it('lets the images change and refuses any other spec field (422), leaving the pod as it was', async () => {
    await fresh('imm-image');
    const patched = await core.patchNamespacedPod(
      { name: 'imm-image', namespace: NS, body: { spec: { containers: [{ name: 'main', image: 'busybox:2' }] } } },
      merge,
    );
    expect(patched.spec?.containers[0]?.image).toBe('busybox:2');

    const status = await expectStatus(
      core.patchNamespacedPod(
        { name: 'imm-image', namespace: NS, body: { spec: { nodeName: 'elsewhere', containers: [{ name: 'main', image: 'busybox:3' }] } } },
        merge,
      ),
      422,
      'Invalid',
    );
    expect(status.message).toContain(`Pod "imm-image" is invalid: spec: Forbidden: ${FORBIDDEN}\n`);
    expect(status.details.causes).toEqual([{ reason: 'FieldValueForbidden', field: 'spec', message: expect.stringContaining(`Forbidden: ${FORBIDDEN}`) }]);
    const stored = await core.readNamespacedPod({ name: 'imm-image', namespace: NS });
    expect(stored.spec?.nodeName).toBeUndefined();
    expect(stored.spec?.containers[0]?.image).toBe('busybox:2');
  });

  it('refuses a changed grace period unless it goes from negative to 1', async () => {
    await fresh('imm-grace');
    await expectStatus(
      core.patchNamespacedPod({ name: 'imm-grace', namespace: NS, body: { spec: { terminationGracePeriodSeconds: 5 } } }, merge),
      422,
      'Invalid',
    );
    expect((await core.readNamespacedPod({ name: 'imm-grace', namespace: NS })).spec?.terminationGracePeriodSeconds).toBe(30);
    await fresh('imm-grace-negative', { terminationGracePeriodSeconds: -1 });
    const patched = await core.patchNamespacedPod({ name: 'imm-grace-negative', namespace: NS, body: { spec: { terminationGracePeriodSeconds: 1 } } }, merge);
    expect(patched.spec?.terminationGracePeriodSeconds).toBe(1);
  });

  it('lets activeDeadlineSeconds be set or lowered, never raised', async () => {
    await fresh('imm-deadline');
    await core.patchNamespacedPod({ name: 'imm-deadline', namespace: NS, body: { spec: { activeDeadlineSeconds: 60 } } }, merge);
    await core.patchNamespacedPod({ name: 'imm-deadline', namespace: NS, body: { spec: { activeDeadlineSeconds: 30 } } }, merge);
    const status = await expectStatus(
      core.patchNamespacedPod({ name: 'imm-deadline', namespace: NS, body: { spec: { activeDeadlineSeconds: 100 } } }, merge),
      422,
      'Invalid',
    );
    expect(status.message).toBe('Pod "imm-deadline" is invalid: spec.activeDeadlineSeconds: Invalid value: 100: must be less than or equal to previous value');
    expect((await core.readNamespacedPod({ name: 'imm-deadline', namespace: NS })).spec?.activeDeadlineSeconds).toBe(30);
  });

  it('lets tolerations be added, not changed', async () => {
    const first = { key: 'a', operator: 'Exists', effect: 'NoSchedule' };
    await fresh('imm-tol', { tolerations: [first] });
    const added = await core.patchNamespacedPod(
      { name: 'imm-tol', namespace: NS, body: { spec: { tolerations: [first, { key: 'b', operator: 'Exists' }] } } },
      merge,
    );
    expect(added.spec?.tolerations).toHaveLength(2);
    const status = await expectStatus(
      core.patchNamespacedPod({ name: 'imm-tol', namespace: NS, body: { spec: { tolerations: [{ key: 'b', operator: 'Exists' }] } } }, merge),
      422,
      'Invalid',
    );
    expect(status.message).toBe('Pod "imm-tol" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds');
    expect((await core.readNamespacedPod({ name: 'imm-tol', namespace: NS })).spec?.tolerations).toHaveLength(2);
  });

  it('refuses added or removed containers, also through server-side apply', async () => {
    await fresh('imm-apply');
    const body = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'imm-apply', namespace: NS },
      spec: {
        containers: [
          { name: 'main', image: 'busybox:1' },
          { name: 'extra', image: 'busybox:1' },
        ],
      },
    };
    const status = await expectStatus(
      core.patchNamespacedPod({ name: 'imm-apply', namespace: NS, body, fieldManager: 'test', force: true }, apply),
      422,
      'Invalid',
    );
    expect(status.message).toBe('Pod "imm-apply" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers');
    expect((await core.readNamespacedPod({ name: 'imm-apply', namespace: NS })).spec?.containers).toHaveLength(1);
  });

  it('keeps status writes through the status subresource allowed', async () => {
    const created = await fresh('imm-status');
    const updated = await core.replaceNamespacedPodStatus({ name: 'imm-status', namespace: NS, body: { ...created, status: { phase: 'Running' } } });
    expect(updated.status?.phase).toBe('Running');
  });
});

describe('Secrets', () => {
  const b64 = (text: string) => Buffer.from(text).toString('base64');

  it('requires tls.crt and tls.key in a kubernetes.io/tls Secret', async () => {
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'tls-good' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c'), 'tls.key': b64('k') } },
    });
    const status = await expectStatus(
      core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'tls-bad' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c') } } }),
      422,
      'Invalid',
    );
    expect(status.message).toBe('Secret "tls-bad" is invalid: data[tls.key]: Required value');
    expect(status.details.causes).toEqual([{ reason: 'FieldValueRequired', field: 'data[tls.key]', message: 'Required value' }]);
    const neither = await expectStatus(
      core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'tls-bad' }, type: 'kubernetes.io/tls', data: {} } }),
      422,
      'Invalid',
    );
    expect(neither.message).toBe('Secret "tls-bad" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]');
    await absent(core.readNamespacedSecret({ name: 'tls-bad', namespace: NS }));
  });

  it('refuses a change of type (422) and keeps the stored one', async () => {
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'typed' }, data: { a: b64('1') } } });
    const read = await core.readNamespacedSecret({ name: 'typed', namespace: NS });
    expect(read.type).toBe('Opaque');
    await core.replaceNamespacedSecret({ name: 'typed', namespace: NS, body: { ...read, data: { a: b64('2') } } });
    const status = await expectStatus(core.patchNamespacedSecret({ name: 'typed', namespace: NS, body: { type: 'example.com/other' } }, merge), 422, 'Invalid');
    expect(status.message).toBe('Secret "typed" is invalid: type: Invalid value: "example.com/other": field is immutable');
    expect((await core.readNamespacedSecret({ name: 'typed', namespace: NS })).type).toBe('Opaque');
  });

  it('requires the account annotation on a service-account-token Secret', async () => {
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'token-good', annotations: { 'kubernetes.io/service-account.name': 'default' } }, type: 'kubernetes.io/service-account-token' },
    });
    const status = await expectStatus(
      core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'token-bad' }, type: 'kubernetes.io/service-account-token' } }),
      422,
      'Invalid',
    );
    expect(status.message).toBe('Secret "token-bad" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value');
    await absent(core.readNamespacedSecret({ name: 'token-bad', namespace: NS }));
  });

  it('checks data keys and the 1 MiB total, and merges stringData into data', async () => {
    const merged = await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'keys-good' }, data: { 'a.b_C-1': b64('x') }, stringData: { plain: 'text' } },
    });
    expect(merged.data).toEqual({ 'a.b_C-1': b64('x'), plain: b64('text') });
    expect(merged.stringData).toBeUndefined();
    const key = await expectStatus(
      core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'keys-bad' }, data: { 'a b': b64('x') } } }),
      422,
      'Invalid',
    );
    expect(key.message).toBe(
      `Secret "keys-bad" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
    );
    const big = Buffer.alloc(1024 * 1024 + 1, 1).toString('base64');
    const size = await expectStatus(
      core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'keys-bad' }, data: { blob: big } } }),
      422,
      'Invalid',
    );
    expect(size.message).toBe('Secret "keys-bad" is invalid: data: Too long: may not be more than 1048576 bytes');
    await absent(core.readNamespacedSecret({ name: 'keys-bad', namespace: NS }));
  });
});

describe('names, labels and annotations', () => {
  it('holds each kind to its name rule', async () => {
    await core.createNamespace({ body: { metadata: { name: 'dns-label-1' } } });
    const ns = await expectStatus(core.createNamespace({ body: { metadata: { name: 'has.dot' } } }), 422, 'Invalid');
    expect(ns.message).toBe('Namespace "has.dot" is invalid: metadata.name: Invalid value: "has.dot": must not contain dots');
    await absent(core.readNamespace({ name: 'has.dot' }));

    await core.createNamespacedService({ namespace: NS, body: { metadata: { name: 'svc-a' }, spec: { ports: [{ port: 80 }] } } });
    const svc = await expectStatus(
      core.createNamespacedService({ namespace: NS, body: { metadata: { name: '1svc' }, spec: { ports: [{ port: 80 }] } } }),
      422,
      'Invalid',
    );
    expect(svc.message).toBe(
      `Service "1svc" is invalid: metadata.name: Invalid value: "1svc": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
    );

    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'c'.repeat(253) } } });
    const long = 'c'.repeat(254);
    const cm = await expectStatus(core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: long } } }), 422, 'Invalid');
    expect(cm.details.causes).toEqual([
      { reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: "${long}": must be no more than 253 characters` },
    ]);
  });

  it('generates names from a valid generateName and refuses an invalid one', async () => {
    const created = await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { generateName: 'gen-' } } });
    expect(created.metadata?.name).toMatch(/^gen-[a-z0-9]{5}$/);
    const status = await expectStatus(core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { generateName: 'Gen-' } } }), 422, 'Invalid');
    expect(status.details.causes[0]).toMatchObject({
      field: 'metadata.generateName',
      message: expect.stringContaining('Invalid value: "Gen-": a lowercase RFC 1123 subdomain'),
    });
  });

  it('checks label keys and values', async () => {
    await core.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: 'labels-good', labels: { 'example.com/app_Name': 'v1.2-x', empty: '' } } },
    });
    const status = await expectStatus(
      core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'labels-bad', labels: { 'a~b/c': 'ok', k: 'v'.repeat(64) } } } }),
      422,
      'Invalid',
    );
    expect(status.details.causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        field: 'metadata.labels',
        message: expect.stringMatching(/^Invalid value: "a~b\/c": prefix part a lowercase RFC 1123 subdomain/),
      },
      { reason: 'FieldValueInvalid', field: 'metadata.labels', message: `Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters` },
    ]);
    expect(status.message).toMatch(
      /^ConfigMap "labels-bad" is invalid: \[metadata\.labels: Invalid value: "a~b\/c": .*, metadata\.labels: Invalid value: "v{64}": must be no more than 63 characters\]$/,
    );
    await absent(core.readNamespacedConfigMap({ name: 'labels-bad', namespace: NS }));
  });

  it('limits annotations to 256 KiB in total, on update too', async () => {
    const half = 'x'.repeat(128 * 1024);
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'annotated', annotations: { a: half } } } });
    const status = await expectStatus(
      core.patchNamespacedConfigMap({ name: 'annotated', namespace: NS, body: { metadata: { annotations: { b: half, c: 'more' } } } }, merge),
      422,
      'Invalid',
    );
    expect(status.message).toBe('ConfigMap "annotated" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes');
    expect(Object.keys((await core.readNamespacedConfigMap({ name: 'annotated', namespace: NS })).metadata?.annotations ?? {})).toEqual(['a']);
  });
});

describe('namespace lifecycle', () => {
  it('answers a create into a missing namespace with 404 on the namespace', async () => {
    const status = await expectStatus(core.createNamespacedConfigMap({ namespace: 'nowhere', body: { metadata: { name: 'c' } } }), 404, 'NotFound');
    expect(status.message).toBe('namespaces "nowhere" not found');
    expect(status.details).toMatchObject({ name: 'nowhere', kind: 'namespaces' });
  });

  it('refuses new content in a terminating namespace (403)', async () => {
    await core.createNamespace({ body: { metadata: { name: 'ending', finalizers: ['example.com/hold'] } } });
    await core.createNamespacedConfigMap({ namespace: 'ending', body: { metadata: { name: 'before' } } });
    await core.deleteNamespace({ name: 'ending' });
    const ns = await core.readNamespace({ name: 'ending' });
    expect(ns.status?.phase).toBe('Terminating');

    const status = await expectStatus(core.createNamespacedConfigMap({ namespace: 'ending', body: { metadata: { name: 'after' } } }), 403, 'Forbidden');
    expect(status.message).toBe('configmaps "after" is forbidden: unable to create new content in namespace ending because it is being terminated');
    expect(status.details).toEqual({
      name: 'after',
      group: '',
      kind: 'configmaps',
      causes: [{ reason: 'NamespaceTerminating', message: 'namespace ending is being terminated', field: 'metadata.namespace' }],
    });
    await absent(core.readNamespacedConfigMap({ name: 'after', namespace: 'ending' }));

    await core.patchNamespace({ name: 'ending', body: { metadata: { finalizers: null } } }, merge);
    await absent(core.readNamespace({ name: 'ending' }));
  });

  it('refuses to delete the immortal namespaces', async () => {
    const status = await expectStatus(core.deleteNamespace({ name: 'default' }), 403, 'Forbidden');
    expect(status.message).toBe('namespaces "default" is forbidden: this namespace may not be deleted');
    expect((await core.readNamespace({ name: 'default' })).status?.phase).toBe('Active');
  });
});

describe('the fleets', () => {
  it('create the ServiceAccounts the upstream charts create, and their pods name them', async () => {
    const { MemoryStore } = await import('../../src/sim/store/MemoryStore.js');
    const { applyFleet, AGENT_NAMESPACE, NODE_AGENT_NAMESPACE } = await import('../../src/sim/fleet.js');
    const store = new MemoryStore();
    await applyFleet(store, 'demo');
    const accounts = store.list(Resources.serviceaccounts).map((a) => `${a.metadata.namespace}/${a.metadata.name}`);
    expect(accounts).toEqual(
      expect.arrayContaining([
        `${AGENT_NAMESPACE}/harvester-vm-dhcp-controller-agent`,
        `${NODE_AGENT_NAMESPACE}/cloud-api-adaptor`,
        `${AGENT_NAMESPACE}/default`,
      ]),
    );
    // Every namespace the fleet made (the virtual clusters' too) has its default account.
    for (const ns of store.list(Resources.namespaces))
      expect(store.get(Resources.serviceaccounts, ns.metadata.name, 'default'), ns.metadata.name).toBeDefined();
    const agents = store.list(Resources.pods, AGENT_NAMESPACE);
    expect(agents.length).toBeGreaterThan(0);
    for (const agent of agents) expect(agent.spec.serviceAccountName).toBe('harvester-vm-dhcp-controller-agent');
  });
});

describe('in-process controllers', () => {
  it("run into the same admission: a DaemonSet's pods wait for their ServiceAccount", async () => {
    const failures: string[] = [];
    const cluster = await startSimulator({ delays: zeroDelays, onError: (_controller, _key, error) => failures.push((error as Error).message) });
    try {
      const coreApi = cluster.kubeConfig.makeApiClient(CoreV1Api);
      const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
      cluster.store.create(Resources.nodes, nodeObject('ds-node', 0));
      await coreApi.createNamespace({ body: { metadata: { name: 'ds-ns' } } });
      const labels = { app: 'ds-agent' };
      await apps.createNamespacedDaemonSet({
        namespace: 'ds-ns',
        body: {
          metadata: { name: 'ds-agent' },
          spec: {
            selector: { matchLabels: labels },
            template: { metadata: { labels }, spec: { serviceAccountName: 'ds-agent', containers: [{ name: 'a', image: 'agent:1' }] } },
          },
        },
      });
      await until(
        'the DaemonSet controller refused',
        () => failures.some((m) => m.includes('error looking up service account ds-ns/ds-agent: serviceaccount "ds-agent" not found')),
        10_000,
      );
      expect(cluster.store.list(Resources.pods, 'ds-ns')).toEqual([]);

      await coreApi.createNamespacedServiceAccount({ namespace: 'ds-ns', body: { metadata: { name: 'ds-agent' } } });
      await until('the DaemonSet pod', () => cluster.store.list(Resources.pods, 'ds-ns').length === 1, 10_000);
      expect(cluster.store.list(Resources.pods, 'ds-ns')[0]!.spec.serviceAccountName).toBe('ds-agent');
    } finally {
      await cluster.stop();
    }
  });
});
