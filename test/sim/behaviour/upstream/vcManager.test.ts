/**
 * The CAPN vc-manager as a simulator behaviour, seen through client-node: its ClusterVersionPartialUpgrade gate comes
 * from its Deployment's --feature-gates; on, it upgrades opted-in VirtualClusters as upstream does, defects included.
 */
import { generateKeyPairSync } from 'node:crypto';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../../../src/sim/index.js';
import { jsonPatch, mergePatch, readUntil } from './helpers.js';

const VC = { group: 'tenancy.x-k8s.io', version: 'v1alpha1', plural: 'virtualclusters', namespace: 'default' };
const CV = { group: 'tenancy.x-k8s.io', version: 'v1alpha1', plural: 'clusterversions', name: 'cv-sample-np' };
const READY = 'tenancy.x-k8s.io/ready-for-upgrade';
const APPLIED = 'tenancy.x-k8s.io/cluster-version-applied';
const NEW_APISERVER = 'virtualcluster/apiserver-v1.17.0';
const PKI = ['root-ca', 'apiserver-ca', 'etcd-ca', 'front-proxy-ca', 'controller-manager-kubeconfig', 'admin-kubeconfig', 'serviceaccount-rsa'];

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

async function start(fleet: string) {
  sim = await startSimulator({ fleet, delays: { ...zeroDelays, controllerMs: 1 }, upstreamTiming: { vcManager: { pollMs: 20 } } });
  return {
    core: sim.kubeConfig.makeApiClient(CoreV1Api),
    apps: sim.kubeConfig.makeApiClient(AppsV1Api),
    custom: sim.kubeConfig.makeApiClient(CustomObjectsApi),
  };
}

type Clients = Awaited<ReturnType<typeof start>>;

const vc1 = (c: Clients): Promise<any> => c.custom.getNamespacedCustomObject({ ...VC, name: 'vc-1' });
const pem = (type: string, body: string) => `-----BEGIN ${type}-----\n${body}\n-----END ${type}-----\n`;
const b64 = (text: string) => Buffer.from(text).toString('base64');

/** The PKI a vc-manager-created cluster has: kubernetes.io/tls secrets; here only root-ca, with a key of `keyType`. */
async function upstreamPki(c: Clients, clusterNs: string, keyType: 'rsa' | 'ec'): Promise<void> {
  for (const name of PKI) await c.core.deleteNamespacedSecret({ name, namespace: clusterNs }).catch(() => undefined);
  const key =
    keyType === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs1', format: 'pem' })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'sec1', format: 'pem' });
  await c.core.createNamespacedSecret({
    namespace: clusterNs,
    body: {
      metadata: { name: 'root-ca' },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': b64(pem('CERTIFICATE', 'c2ltdWxhdGVk')), 'tls.key': b64(String(key)) },
    },
  });
}

async function bumpClusterVersion(c: Clients): Promise<string> {
  const cv = await c.custom.patchClusterCustomObject(
    { ...CV, body: [{ op: 'replace', path: '/spec/apiServer/statefulset/spec/template/spec/containers/0/image', value: NEW_APISERVER }] },
    jsonPatch,
  );
  return cv.metadata.resourceVersion;
}

const optIn = (c: Clients) => c.custom.patchNamespacedCustomObject({ ...VC, name: 'vc-1', body: { metadata: { labels: { [READY]: 'true' } } } }, mergePatch);

describe('CAPN vc-manager, ClusterVersionPartialUpgrade off (the upstream default)', () => {
  it('does nothing for an opted-in VirtualCluster until the gate is turned on in its Deployment', async () => {
    const c = await start('nodes=1,clusters=1,upstream=vc-manager');
    const deployment = await c.apps.readNamespacedDeployment({ name: 'vc-manager', namespace: 'vc-manager' });
    expect(deployment.spec!.template.spec!.containers[0]!.args).toEqual(['--disable-stacktrace=true', '--enable-webhook=true']);
    const vc = await vc1(c);
    const ns = vc.status.clusterNamespace;
    await upstreamPki(c, ns, 'rsa');
    const rv = await bumpClusterVersion(c);
    await optIn(c);
    await sim!.behaviour!.idle();
    const untouched = await vc1(c);
    expect(untouched.metadata.labels[READY]).toBe('true');
    expect(untouched.status.reason).toBe(vc.status.reason);
    const sts = await c.apps.readNamespacedStatefulSet({ name: 'apiserver', namespace: ns });
    expect(sts.spec!.template.spec!.containers[0]!.image).not.toBe(NEW_APISERVER);

    // Turning the gate on restarts the manager, which then upgrades the still-labelled cluster.
    const args = [...deployment.spec!.template.spec!.containers[0]!.args!, '--feature-gates=ClusterVersionPartialUpgrade=true'];
    await c.apps.patchNamespacedDeployment(
      { name: 'vc-manager', namespace: 'vc-manager', body: [{ op: 'replace', path: '/spec/template/spec/containers/0/args', value: args }] },
      jsonPatch,
    );
    const done = await readUntil(
      'the upgrade completes',
      () => vc1(c),
      (v) => v.status.reason === 'TenantControlPlaneUpgradeCompleted',
    );
    expect(done.metadata.labels[APPLIED]).toBe(rv);
  });
});

describe('CAPN vc-manager, ClusterVersionPartialUpgrade on', () => {
  it('upgrades an opted-in VirtualCluster as upstream does: PKI, apiserver, controller-manager, status, label', async () => {
    const c = await start('nodes=2,clusters=2,upstream=vc-manager:partial-upgrade');
    const vc = await vc1(c);
    const ns = vc.status.clusterNamespace;
    await upstreamPki(c, ns, 'rsa');
    const rootBefore = await c.core.readNamespacedSecret({ name: 'root-ca', namespace: ns });
    const rv = await bumpClusterVersion(c);
    await optIn(c);
    const done = await readUntil(
      'the upgrade completes',
      () => vc1(c),
      (v) => v.status.reason === 'TenantControlPlaneUpgradeCompleted',
    );
    expect(done.status).toMatchObject({ phase: 'Running', message: 'tenant control plane is upgraded', clusterNamespace: ns });
    expect(done.status.conditions.at(-1)).toMatchObject({
      status: 'True',
      reason: 'TenantControlPlaneUpgradeCompleted',
      message: 'tenant control plane is upgraded',
    });
    expect(done.status.conditions.at(-1)).not.toHaveProperty('type');
    expect(done.metadata.labels[READY]).toBeUndefined();
    expect(done.metadata.labels[APPLIED]).toBe(rv);

    const apiserver = await c.apps.readNamespacedStatefulSet({ name: 'apiserver', namespace: ns });
    expect(apiserver.spec!.template.spec!.containers[0]!.image).toBe(NEW_APISERVER);
    expect(Object.keys(apiserver.spec!.template.metadata!.annotations!).sort()).toEqual([
      'apiserver-ca-hash',
      'front-proxy-ca-hash',
      'root-ca-hash',
      'serviceaccount-rsa-hash',
    ]);
    expect(apiserver.spec!.template.metadata!.labels!['tenancy.x-k8s.io/cluster']).toBe(ns);
    expect(apiserver.metadata!.managedFields!.some((f) => f.manager === 'virtualcluster/provisioner/native' && f.operation === 'Apply')).toBe(true);
    const cm = await c.apps.readNamespacedStatefulSet({ name: 'controller-manager', namespace: ns });
    expect(Object.keys(cm.spec!.template.metadata!.annotations!).sort()).toEqual([
      'controller-manager-kubeconfig-hash',
      'root-ca-hash',
      'serviceaccount-rsa-hash',
    ]);
    // root-ca is reused; the rest regenerated with upstream's types.
    const secrets = await c.core.listNamespacedSecret({ namespace: ns });
    const byName = new Map(secrets.items.map((s) => [s.metadata!.name!, s]));
    expect(byName.get('root-ca')!.data).toEqual(rootBefore.data);
    for (const name of ['apiserver-ca', 'etcd-ca', 'front-proxy-ca', 'serviceaccount-rsa']) expect(byName.get(name)?.type).toBe('kubernetes.io/tls');
    for (const name of ['controller-manager-kubeconfig', 'admin-kubeconfig']) expect(Object.keys(byName.get(name)!.data!)).toEqual([name]);
    // etcd is not touched; the other cluster was not opted in.
    const etcd = await c.apps.readNamespacedStatefulSet({ name: 'etcd', namespace: ns });
    expect(etcd.spec!.template.metadata!.annotations ?? {}).not.toHaveProperty('root-ca-hash');
    const other: any = await c.custom.getNamespacedCustomObject({ ...VC, name: 'vc-2' });
    const otherSts = await c.apps.readNamespacedStatefulSet({ name: 'apiserver', namespace: other.status.clusterNamespace });
    expect(otherSts.spec!.template.spec!.containers[0]!.image).not.toBe(NEW_APISERVER);
  });

  it('keeps the upstream defect: a failed upgrade records the applied marker, and re-labelling reports Completed with nothing done', async () => {
    const c = await start('clusters=1,upstream=vc-manager:partial-upgrade');
    const vc = await vc1(c);
    const ns = vc.status.clusterNamespace;
    await upstreamPki(c, ns, 'ec'); // an EC root key, which upstream's PKCS#1 decoder cannot read
    const rv = await bumpClusterVersion(c);
    await optIn(c);
    const failed = await readUntil(
      'the upgrade fails',
      () => vc1(c),
      (v) => v.status.reason === 'TenantControlPlaneUpgradeFailed',
    );
    expect(failed.status.message).toBe('fail to upgrade: x509: failed to parse private key (use ParseECPrivateKey instead for this key format)');
    expect(failed.status.phase).toBe('Running');
    expect(failed.metadata.labels[READY]).toBeUndefined();
    expect(failed.metadata.labels[APPLIED]).toBe(rv); // written although nothing was applied

    await optIn(c);
    const again = await readUntil(
      'the retry reports success',
      () => vc1(c),
      (v) => v.status.reason === 'TenantControlPlaneUpgradeCompleted',
    );
    expect(again.metadata.labels[READY]).toBeUndefined();
    const sts = await c.apps.readNamespacedStatefulSet({ name: 'apiserver', namespace: ns });
    expect(sts.spec!.template.spec!.containers[0]!.image).not.toBe(NEW_APISERVER);
  });

  it('gives up on a component after --provisioner-timeout, leaving the cluster half-upgraded and the marker set', async () => {
    const c = await start('nodes=1,clusters=1,upstream=vc-manager:partial-upgrade');
    const d = await c.apps.readNamespacedDeployment({ name: 'vc-manager', namespace: 'vc-manager' });
    const args = [...d.spec!.template.spec!.containers[0]!.args!, '--provisioner-timeout=1s'];
    await c.apps.patchNamespacedDeployment(
      { name: 'vc-manager', namespace: 'vc-manager', body: [{ op: 'replace', path: '/spec/template/spec/containers/0/args', value: args }] },
      jsonPatch,
    );
    const vc = await vc1(c);
    const ns = vc.status.clusterNamespace;
    await upstreamPki(c, ns, 'rsa');
    const cmBefore = await c.apps.readNamespacedStatefulSet({ name: 'controller-manager', namespace: ns });
    const cv = await c.custom.patchClusterCustomObject(
      { ...CV, body: [{ op: 'replace', path: '/spec/apiServer/statefulset/spec/template/spec/containers/0/image', value: 'virtualcluster/apiserver:bad-1' }] },
      jsonPatch,
    );
    await optIn(c);
    const failed = await readUntil(
      'the upgrade times out',
      () => vc1(c),
      (v) => v.status.reason === 'TenantControlPlaneUpgradeFailed',
    );
    expect(failed.status.message).toBe(`fail to upgrade: ${ns}/apiserver is not ready in 1 seconds`);
    expect(failed.metadata.labels[APPLIED]).toBe(cv.metadata.resourceVersion);
    // The apiserver was applied (and is stuck); the controller-manager was never reached.
    const apiserver = await c.apps.readNamespacedStatefulSet({ name: 'apiserver', namespace: ns });
    expect(apiserver.spec!.template.spec!.containers[0]!.image).toBe('virtualcluster/apiserver:bad-1');
    const cm = await c.apps.readNamespacedStatefulSet({ name: 'controller-manager', namespace: ns });
    expect(cm.metadata!.generation).toBe(cmBefore.metadata!.generation);
    expect(cm.spec!.template).toEqual(cmBefore.spec!.template);
  });
});

describe('the vc-manager flags, read as Go reads them', () => {
  async function setArgs(c: Clients, args: string[]) {
    await c.apps.patchNamespacedDeployment(
      { name: 'vc-manager', namespace: 'vc-manager', body: [{ op: 'replace', path: '/spec/template/spec/containers/0/args', value: args }] },
      jsonPatch,
    );
  }

  it('accumulates repeated --feature-gates and takes any strconv.ParseBool spelling: the gate is on, and it upgrades', async () => {
    const c = await start('nodes=1,clusters=1,upstream=vc-manager');
    await setArgs(c, ['--enable-webhook=true', '--feature-gates=SuperClusterLabelling=true', '--feature-gates=ClusterVersionPartialUpgrade=1']);
    await upstreamPki(c, (await vc1(c)).status.clusterNamespace, 'rsa');
    const rv = await bumpClusterVersion(c);
    await optIn(c);
    const done = await readUntil(
      'upgraded by the vc-manager',
      () => vc1(c),
      (vc) => vc.metadata.labels?.[READY] === undefined,
    );
    expect(done.metadata.labels[APPLIED]).toBe(rv);
  });

  it('exits on a gate key it does not know: nothing is upgraded', async () => {
    const c = await start('nodes=1,clusters=1,upstream=vc-manager');
    await upstreamPki(c, (await vc1(c)).status.clusterNamespace, 'rsa');
    const rv = await bumpClusterVersion(c);
    await readUntil(
      'opted in',
      () =>
        optIn(c).then(
          () => true,
          () => false,
        ),
      (ok) => ok,
    );
    await setArgs(c, ['--enable-webhook=true', '--feature-gates=A=true', '--feature-gates=ClusterVersionPartialUpgrade=1']);
    await sim!.behaviour!.idle();
    const vc = await vc1(c);
    expect(vc.metadata.labels[READY]).toBe('true');
    expect(vc.metadata.labels[APPLIED]).not.toBe(rv);
  });
});

describe('the vc-manager VirtualCluster webhook (--enable-webhook, as all_in_one.yaml runs it)', () => {
  const HOOK = 'virtualcluster.validating.webhook';
  const URL = 'https://virtualcluster-webhook-service.vc-manager.svc:9443/validate-tenancy-x-k8s-io-v1alpha1-virtualcluster?timeout=10s';

  it('registers at start-up, validates VirtualCluster updates, and refuses every write once the manager is scaled to 0', async () => {
    const c = await start('nodes=1,clusters=1,upstream=vc-manager');
    const admission = sim!.kubeConfig.makeApiClient((await import('@kubernetes/client-node')).AdmissionregistrationV1Api);
    const config = await readUntil(
      'the webhook registered',
      () => admission.listValidatingWebhookConfiguration(),
      (l) => l.items.length === 1,
    );
    expect(config.items[0]!.metadata!.name).toBe('virtualcluster-validating-webhook-configuration');
    expect(config.items[0]!.webhooks![0]).toMatchObject({
      name: HOOK,
      failurePolicy: 'Fail',
      clientConfig: { service: { name: 'virtualcluster-webhook-service', namespace: 'vc-manager', port: 9443 } },
      rules: [{ operations: ['*'], apiGroups: ['tenancy.x-k8s.io'], apiVersions: ['v1alpha1'], resources: ['virtualclusters'] }],
    });
    await readUntil(
      'the manager pod serving',
      () =>
        optIn(c).then(
          () => 'ok',
          (e: { body: string }) => JSON.parse(e.body).message,
        ),
      (m) => m === 'ok',
    );
    // The validator: a phase once set cannot be emptied.
    const emptied = await c.custom.patchNamespacedCustomObject({ ...VC, name: 'vc-1', body: { status: { phase: '' } } }, mergePatch).then(
      () => undefined,
      (e: { code: number; body: string }) => ({ code: e.code, message: JSON.parse(e.body).message }),
    );
    expect(emptied).toEqual({
      code: 422,
      message: `admission webhook "${HOOK}" denied the request: VirtualCluster.tenancy.x-k8s.io "vc-1" is invalid: status.phase: Invalid value: "vc-1": cannot set virtualcluster.Status.Phase to empty`,
    });
    // Scaled to 0: the configuration stays, nothing serves it.
    await c.apps.patchNamespacedDeployment({ name: 'vc-manager', namespace: 'vc-manager', body: { spec: { replicas: 0 } } }, mergePatch);
    const refused = await readUntil(
      'refused for want of endpoints',
      () =>
        optIn(c).then(
          () => 'ok',
          (e: { code: number; body: string }) => `${e.code} ${JSON.parse(e.body).message}`,
        ),
      (m) => m.includes('no endpoints'),
    );
    expect(refused).toBe(
      `500 Internal error occurred: failed calling webhook "${HOOK}": failed to call webhook: Post "${URL}": no endpoints available for service "virtualcluster-webhook-service"`,
    );
  });
});
