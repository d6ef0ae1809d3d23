/**
 * Harvester's add-on controller for the vm-dhcp-controller chart, through client-node: the Addon's valuesContent is
 * what the controller Deployment's --image comes from; a hand-made change survives only until the next add-on change;
 * disabling the add-on uninstalls the release, ServiceAccounts and RBAC included.
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../../../src/sim/index.js';
import { jsonPatch, mergePatch, readUntil } from './helpers.js';

const NS = 'harvester-system';
const NAME = 'harvester-vm-dhcp-controller';
const ADDON = { group: 'harvesterhci.io', version: 'v1beta1', plural: 'addons', namespace: NS, name: NAME };

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

async function start() {
  sim = await startSimulator({ fleet: 'pools=1,nodes=1,upstream=vm-dhcp:addon', delays: { ...zeroDelays, controllerMs: 1 } });
  await sim.behaviour!.idle(); // the add-on controller has seen the Addon
  return {
    apps: sim.kubeConfig.makeApiClient(AppsV1Api),
    core: sim.kubeConfig.makeApiClient(CoreV1Api),
    rbac: sim.kubeConfig.makeApiClient(RbacAuthorizationV1Api),
    custom: sim.kubeConfig.makeApiClient(CustomObjectsApi),
  };
}

const imageArg = async (apps: AppsV1Api) => {
  const args = (await apps.readNamespacedDeployment({ name: NAME, namespace: NS })).spec!.template.spec!.containers[0]!.args!;
  return args[args.indexOf('--image') + 1];
};

describe("Harvester's add-on for the vm-dhcp-controller", () => {
  it("renders the controller's --image from the Addon's valuesContent, with Helm's release annotations", async () => {
    const { apps, custom } = await start();
    const addon = (await custom.getNamespacedCustomObject(ADDON)) as any;
    expect(addon.spec).toMatchObject({ enabled: true, chart: NAME, repo: 'https://charts.harvesterhci.io' });
    expect(addon.spec.valuesContent).toBe('agent:\n  image:\n    repository: rancher/harvester-vm-dhcp-agent\n    tag: v0.3.0\n');
    const deployment = await apps.readNamespacedDeployment({ name: NAME, namespace: NS });
    expect(deployment.metadata!.annotations).toMatchObject({ 'meta.helm.sh/release-name': NAME, 'meta.helm.sh/release-namespace': NS });
    await custom.patchNamespacedCustomObject(
      { ...ADDON, body: { spec: { valuesContent: 'agent:\n  image:\n    repository: rancher/harvester-vm-dhcp-agent\n    tag: v0.3.1\n' } } },
      mergePatch,
    );
    await readUntil(
      'the add-on re-rendered',
      () => imageArg(apps),
      (image) => image === 'rancher/harvester-vm-dhcp-agent:v0.3.1',
    );
    await readUntil(
      'status',
      () => custom.getNamespacedCustomObject(ADDON) as Promise<any>,
      (a) => a.status?.status === 'AddonDeploySuccessful',
    );
  });

  it('keeps a --image patched by hand until the next add-on change, which puts its own value back', async () => {
    const { apps, custom } = await start();
    const d = await apps.readNamespacedDeployment({ name: NAME, namespace: NS });
    const at = d.spec!.template.spec!.containers[0]!.args!.indexOf('--image') + 1;
    await apps.patchNamespacedDeployment(
      {
        name: NAME,
        namespace: NS,
        body: [{ op: 'replace', path: `/spec/template/spec/containers/0/args/${at}`, value: 'rancher/harvester-vm-dhcp-agent:by-hand' }],
      },
      jsonPatch,
    );
    await sim!.behaviour!.idle();
    expect(await imageArg(apps)).toBe('rancher/harvester-vm-dhcp-agent:by-hand');
    // An add-on upgrade (Harvester's upgrade_addon: a merge patch of spec.version and spec.valuesContent).
    await custom.patchNamespacedCustomObject({ ...ADDON, body: { spec: { version: '0.3.0', valuesContent: '' } } }, mergePatch);
    // valuesContent "" is the chart's defaults: the agent tag defaults to the chart's appVersion.
    await readUntil(
      'the chart value back',
      () => imageArg(apps),
      (image) => image === 'rancher/harvester-vm-dhcp-agent:v0.3.0',
    );
  });

  it('disabling the add-on uninstalls the release: Deployments, Services, ServiceAccounts, RBAC', async () => {
    const { apps, core, rbac, custom } = await start();
    await custom.patchNamespacedCustomObject({ ...ADDON, body: { spec: { enabled: false } } }, mergePatch);
    await readUntil(
      'uninstalled',
      () => apps.listNamespacedDeployment({ namespace: NS }),
      (l) => l.items.length === 0,
    );
    const accounts = (await core.listNamespacedServiceAccount({ namespace: NS })).items.map((a) => a.metadata!.name);
    expect(accounts).toEqual(['default']);
    const roles = (await rbac.listClusterRole()).items.map((r) => r.metadata!.name).filter((n) => n!.startsWith(NAME));
    expect(roles).toEqual([]);
    expect(((await custom.getNamespacedCustomObject(ADDON)) as any).status.status).toBe('AddonDisabled');
  });
});
