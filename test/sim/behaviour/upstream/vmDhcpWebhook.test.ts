/**
 * The vm-dhcp webhook as the chart installs it, seen through client-node: it registers a validating webhook with
 * failurePolicy Fail over every IPPool write, validates with upstream's rules (two generations), and stays registered
 * when its pods are gone (scaled to 0, `helm uninstall`), refusing every IPPool write from then on.
 */
import { AdmissionregistrationV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { helmUninstall } from '../../../../src/sim/behaviour/upstream/vmDhcpChart.js';
import { startSimulator, type Simulator } from '../../../../src/sim/index.js';
import { expectStatus } from '../../apiHelpers.js';
import { mergePatch, readUntil } from './helpers.js';

const NS = 'harvester-system';
const WEBHOOK = 'harvester-vm-dhcp-controller-webhook';
const HOOK = `validator.${NS}.${WEBHOOK}`;
const POOL = { group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools', namespace: 'default' };
const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';
const URL = `https://${WEBHOOK}.${NS}.svc:443/v1/webhook/validation?timeout=10s`;

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

async function start(fleet: string) {
  sim = await startSimulator({ fleet, delays: { ...zeroDelays, podTerminateMs: 5, controllerMs: 1 }, upstreamTiming: { vmDhcp: { retryMaxMs: 50 } } });
  const api = {
    core: sim.kubeConfig.makeApiClient(CoreV1Api),
    apps: sim.kubeConfig.makeApiClient(AppsV1Api),
    custom: sim.kubeConfig.makeApiClient(CustomObjectsApi),
    admission: sim.kubeConfig.makeApiClient(AdmissionregistrationV1Api),
  };
  await readUntil(
    'the webhook registered',
    () => api.admission.listValidatingWebhookConfiguration(),
    (l) => l.items.length === 1,
  );
  return api;
}

const hold = (custom: CustomObjectsApi, name: string, dryRun?: 'All') =>
  custom.patchNamespacedCustomObject({ ...POOL, name, body: { metadata: { annotations: { [HOLD]: 'true' } } }, ...(dryRun ? { dryRun } : {}) }, mergePatch);

/** A pool whose server IP lies inside its own range (upstream then marks it RESERVED in status.ipv4.allocated). */
async function serverInRange(custom: CustomObjectsApi, name: string) {
  await custom.createNamespacedCustomObject({
    group: 'k8s.cni.cncf.io',
    version: 'v1',
    plural: 'network-attachment-definitions',
    namespace: 'default',
    body: {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name, namespace: 'default', labels: { 'network.harvesterhci.io/clusternetwork': 'mgmt' } },
      spec: { config: '{}' },
    },
  });
  await custom.createNamespacedCustomObject({
    ...POOL,
    body: {
      apiVersion: 'network.harvesterhci.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name, namespace: 'default' },
      spec: {
        ipv4Config: { cidr: '10.9.0.0/24', serverIP: '10.9.0.20', pool: { start: '10.9.0.10', end: '10.9.0.200' }, router: '10.9.0.1' },
        networkName: `default/${name}`,
      },
    },
  });
  await readUntil(
    `${name} marked RESERVED`,
    () => custom.getNamespacedCustomObject({ ...POOL, name }) as Promise<any>,
    (p) => p.status?.ipv4?.allocated?.['10.9.0.20'] === 'RESERVED',
  );
}

describe('the vm-dhcp webhook (chart default v0.3.0)', () => {
  it('registers a validating webhook over IPPool writes, failurePolicy Fail, owned by its CA Secret', async () => {
    const { admission, core } = await start('pools=2,nodes=2,upstream=vm-dhcp');
    const config = await admission.readValidatingWebhookConfiguration({ name: WEBHOOK });
    const ca = await core.readNamespacedSecret({ name: `${WEBHOOK}-ca`, namespace: NS });
    expect(config.metadata!.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Secret', name: `${WEBHOOK}-ca`, uid: ca.metadata!.uid }]);
    expect(config.webhooks).toHaveLength(1);
    expect(config.webhooks![0]).toMatchObject({
      name: HOOK,
      clientConfig: { service: { namespace: NS, name: WEBHOOK, path: '/v1/webhook/validation', port: 443 } },
      failurePolicy: 'Fail',
      sideEffects: 'None',
    });
    expect(config.webhooks![0]!.rules![0]).toEqual({
      operations: ['CREATE', 'UPDATE', 'DELETE'],
      apiGroups: ['network.harvesterhci.io'],
      apiVersions: ['v1alpha1'],
      resources: ['ippools'],
      scope: 'Namespaced',
    });
  });

  it('refuses an update of a pool whose NetworkAttachmentDefinition is gone, with upstream message; others pass', async () => {
    const { custom } = await start('pools=2,nodes=2,upstream=vm-dhcp');
    await hold(custom, 'net-1');
    await custom.deleteNamespacedCustomObject({
      group: 'k8s.cni.cncf.io',
      version: 'v1',
      plural: 'network-attachment-definitions',
      namespace: 'default',
      name: 'net-2',
    });
    const status = await expectStatus(hold(custom, 'net-2', 'All'), 500, 'InternalError');
    expect(status.message).toBe(
      `admission webhook "${HOOK}" denied the request: cannot update IPPool default/net-2 because network-attachment-definitions.k8s.cni.cncf.io "net-2" not found`,
    );
    await expectStatus(hold(custom, 'net-2'), 500, 'InternalError');
    expect(((await custom.getNamespacedCustomObject({ ...POOL, name: 'net-2' })) as any).metadata.annotations?.[HOLD]).toBeUndefined();
  });

  it('v0.3.0 refuses every update of a pool whose server IP lies in its range; v0.3.1+ does not', async () => {
    const legacy = await start('pools=1,nodes=2,upstream=vm-dhcp');
    await serverInRange(legacy.custom, 'inside');
    const status = await expectStatus(hold(legacy.custom, 'inside'), 500, 'InternalError');
    expect(status.message).toBe(
      `admission webhook "${HOOK}" denied the request: cannot update IPPool default/inside because server ip 10.9.0.20 is already allocated`,
    );
    await sim!.stop();

    const current = await start('pools=1,nodes=2,upstream=vm-dhcp@v1.8.1');
    await serverInRange(current.custom, 'inside');
    await hold(current.custom, 'inside');
  });

  it('scaled to 0 or uninstalled, it stays registered: every IPPool update is refused, no endpoints or no Service', async () => {
    const { apps, custom, admission } = await start('pools=2,nodes=2,upstream=vm-dhcp');
    await apps.patchNamespacedDeployment({ name: WEBHOOK, namespace: NS, body: { spec: { replicas: 0 } } }, mergePatch);
    const noEndpoints = `Internal error occurred: failed calling webhook "${HOOK}": failed to call webhook: Post "${URL}": no endpoints available for service "${WEBHOOK}"`;
    await readUntil(
      'refused for want of endpoints',
      () =>
        hold(custom, 'net-1', 'All').then(
          () => 'allowed',
          (e: { body: string }) => JSON.parse(e.body).message as string,
        ),
      (m) => m === noEndpoints,
    );
    // helm uninstall removes the Service and the Deployments; the configuration (owned by the CA Secret) stays.
    const deleted = helmUninstall(sim!.store);
    expect(deleted).toEqual(expect.arrayContaining([`Service/${WEBHOOK}`, `Deployment/${WEBHOOK}`, 'ServiceAccount/harvester-vm-dhcp-controller-agent']));
    expect((await admission.listValidatingWebhookConfiguration()).items.map((c) => c.metadata!.name)).toEqual([WEBHOOK]);
    const status = await expectStatus(hold(custom, 'net-1'), 500, 'InternalError');
    expect(status.message).toBe(
      `Internal error occurred: failed calling webhook "${HOOK}": failed to call webhook: Post "${URL}": service "${WEBHOOK}" not found`,
    );
  });
});
