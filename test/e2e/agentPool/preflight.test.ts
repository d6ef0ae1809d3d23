/**
 * Preflight before any hold (issue 27): the real server over HTTP, the simulator running the vm-dhcp chart with its
 * webhook (failurePolicy Fail over every IPPool UPDATE). A rollout that would be refused part-way is refused before
 * anything is written — no hold, no --image change, no rollout — with the API server's own message, naming the pool.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { helmUninstall } from '../../../src/sim/behaviour/upstream/vmDhcpChart.js';
import type { KubeObject } from '../../../src/sim/types.js';
import { BUMP, NEW, OLD, startRig, waitForRollout, type Rig } from './rig.js';

const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';
const NS = 'harvester-system';
const CONTROLLER = 'harvester-vm-dhcp-controller';
const WEBHOOK = `${CONTROLLER}-webhook`;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const deployments = (r: Rig) => r.sim.store.resourceType('apps', 'deployments')!;
function controllerImage(r: Rig): string {
  const args: string[] = r.sim.store.get(deployments(r), NS, CONTROLLER)!.spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}
const holds = (r: Rig, names: string[]) => names.filter((p) => r.pool(p)!.metadata.annotations?.[HOLD] !== undefined);
async function refusalOf(r: Rig, input: Record<string, unknown>): Promise<{ message: string; extensions: Record<string, any> } | undefined> {
  return r.gql(BUMP, { input }).then(
    () => undefined,
    (e: { errors: { message: string; extensions: Record<string, any> }[] }) => e.errors[0],
  );
}
async function webhookServing(r: Rig): Promise<void> {
  const type = r.sim.store.resourceType('admissionregistration.k8s.io', 'validatingwebhookconfigurations')!;
  await r.waitFor('the vm-dhcp webhook registered', () => r.sim.store.list(type).length > 0);
  await r.waitFor(
    'rollplane sees the controller',
    async () => (await r.gql(`{ agentPool(namespace: "default", name: "net-1") { mode } }`)).agentPool.mode === 'COEXIST',
  );
}

describe('preflight beside the vm-dhcp-controller and its webhook', () => {
  it('a stale pool (its NetworkAttachmentDefinition deleted): refused before anything is written, naming the pool and the webhook message', async () => {
    rig = await startRig({ fleet: 'pools=3,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    await webhookServing(r);
    const nads = r.sim.store.resourceType('k8s.cni.cncf.io', 'network-attachment-definitions')!;
    r.sim.store.delete(nads, 'default', 'net-3');
    const writes = { ...r.writes };
    // Only net-1 is selected: the hold on net-3 (outside the selection) is needed all the same.
    const error = await refusalOf(r, { image: NEW, pools: { names: ['net-1'] } });
    expect(error?.extensions).toMatchObject({ code: 'CONFLICT', reason: 'PREFLIGHT_REFUSED', pool: 'default/net-3' });
    expect(error?.message).toBe(
      `ippool default/net-3 cannot be held: admission webhook "validator.${NS}.${WEBHOOK}" denied the request: cannot update IPPool default/net-3 because network-attachment-definitions.k8s.cni.cncf.io "net-3" not found`,
    );
    // A dry run says the same.
    expect((await refusalOf(r, { image: NEW, pools: { names: ['net-1'] }, dryRun: true }))?.extensions.reason).toBe('PREFLIGHT_REFUSED');
    expect(holds(r, ['net-1', 'net-2', 'net-3'])).toEqual([]);
    expect(controllerImage(r)).toBe(OLD);
    expect(r.writes).toEqual(writes); // dry runs only: rollplane wrote nothing
    expect((await r.gql('{ rollouts(first: 5) { totalCount } }')).rollouts.totalCount).toBe(0);
  });

  it('a webhook without endpoints: UNAVAILABLE before anything is written; once it serves again the rollout runs', async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    await webhookServing(r);
    const scale = (replicas: number) => {
      const d = structuredClone(r.sim.store.get(deployments(r), NS, WEBHOOK)!) as KubeObject;
      d.spec.replicas = replicas;
      r.sim.store.update(deployments(r), d);
    };
    scale(0);
    const error = await r.waitFor('refused for want of endpoints', async () => {
      const e = await refusalOf(r, { image: NEW });
      return e?.message.includes('no endpoints available') && e;
    });
    expect(error.extensions).toMatchObject({ code: 'UNAVAILABLE', reason: 'PREFLIGHT_REFUSED' });
    expect(error.message).toContain(`failed calling webhook "validator.${NS}.${WEBHOOK}"`);
    expect(holds(r, ['net-1', 'net-2'])).toEqual([]);
    expect(controllerImage(r)).toBe(OLD);
    scale(1);
    const data = await r.waitFor('accepted once the webhook serves', () => r.gql(BUMP, { input: { image: NEW } }).catch(() => undefined));
    expect((await waitForRollout(r, data.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
  });

  it('v0.3.0 refuses every hold of a pool whose server IP lies in its own range: the bump names it', async () => {
    rig = await startRig({ fleet: 'pools=1,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    await webhookServing(r);
    const pools = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    r.sim.store.create(r.sim.store.resourceType('k8s.cni.cncf.io', 'network-attachment-definitions')!, {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: 'inside', namespace: 'default', labels: { 'network.harvesterhci.io/clusternetwork': 'mgmt' } },
      spec: { config: '{}' },
    });
    r.sim.store.create(pools, {
      apiVersion: 'network.harvesterhci.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: 'inside', namespace: 'default' },
      spec: { ipv4Config: { cidr: '10.9.0.0/24', serverIP: '10.9.0.20', pool: { start: '10.9.0.10', end: '10.9.0.200' } }, networkName: 'default/inside' },
    });
    await r.waitFor('its agent Ready', () => r.readyAgents().has('inside'));
    await r.waitFor('server IP RESERVED', () => r.pool('inside')!.status?.ipv4?.allocated?.['10.9.0.20'] === 'RESERVED');
    const error = await refusalOf(r, { image: NEW, pools: { names: ['net-1'] } });
    expect(error?.extensions).toMatchObject({ code: 'CONFLICT', pool: 'default/inside' });
    expect(error?.message).toContain('because server ip 10.9.0.20 is already allocated');
    expect(holds(r, ['net-1', 'inside'])).toEqual([]);
  });

  it('a controller before v0.3.0 (no hold) is refused with a message saying why', async () => {
    rig = await startRig({ fleet: 'pools=1,nodes=2,upstream=vm-dhcp@v0.2.1' });
    const r = rig;
    const error = await r.waitFor('refused', () => refusalOf(r, { image: NEW }));
    expect(error.extensions).toMatchObject({ code: 'CONFLICT', reason: 'CONTROLLER_UNSUPPORTED' });
    expect(error.message).toBe(
      `the vm-dhcp-controller ${NS}/${CONTROLLER} runs v0.2.1: releases before v0.3.0 have no hold annotation and never replace a running agent, so a rollout beside it could never finish; upgrade the controller to v0.3.0 or later, or run it with --no-agent to let rollplane manage agents directly`,
    );
  });

  it('images as the controller parses them: v0.3.0 refuses what it cannot parse; v1.8.1 runs a tagless image as :latest', async () => {
    rig = await startRig({ fleet: 'pools=1,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    let r = rig;
    await webhookServing(r);
    for (const image of ['registry.local:5000/harvester-vm-dhcp-agent:v0.3.1', 'rancher/harvester-vm-dhcp-agent']) {
      const error = await refusalOf(r, { image });
      expect(error?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.image' });
      expect(error?.message).toContain('it would exit with "Error parse agent image name"');
    }
    await rig.close();
    rig = await startRig({ fleet: 'pools=1,nodes=2,upstream=vm-dhcp@v1.8.1', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    r = rig;
    await webhookServing(r);
    const data = await r.gql(BUMP, { input: { image: 'rancher/harvester-vm-dhcp-agent' } });
    expect(data.bumpAgentImage.rollout.toVersion).toBe('rancher/harvester-vm-dhcp-agent:latest');
    const done = await waitForRollout(r, data.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED']);
    expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    expect(r.agent('net-1')!.spec.containers[0].image).toBe('rancher/harvester-vm-dhcp-agent:latest');
  });
});

describe('direct mode after helm uninstall', () => {
  it("refuses a rollout whose agents would be refused: the chart's agent ServiceAccount is gone", async () => {
    rig = await startRig({ fleet: 'pools=2,nodes=2,upstream=vm-dhcp', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    await webhookServing(r);
    helmUninstall(r.sim.store);
    await r.waitFor(
      'rollplane manages agents directly',
      async () => (await r.gql(`{ agentPool(namespace: "default", name: "net-1") { mode } }`)).agentPool.mode === 'DIRECT',
    );
    const error = await refusalOf(r, { image: NEW });
    expect(error?.extensions).toMatchObject({ code: 'CONFLICT', reason: 'PREFLIGHT_REFUSED', serviceAccount: `${NS}/${CONTROLLER}-agent` });
    expect(error?.message).toContain(`error looking up service account ${NS}/${CONTROLLER}-agent: serviceaccount "${CONTROLLER}-agent" not found`);
    expect((await r.gql('{ rollouts(first: 5) { totalCount } }')).rollouts.totalCount).toBe(0);
    for (const p of ['net-1', 'net-2']) expect(r.agent(p)!.spec.containers[0].image).toBe(OLD);
  });
});
