/**
 * Attack 17, H1: a helm upgrade of the vm-dhcp-controller made after a rollout started but before rollplane's own
 * change of its --image landed (the first hold write hung; the service was killed, or not). Every time, rollplane
 * wrote the rollout's image over the helm upgrade — a downgrade there — and upstream recreated the agents on it. Its
 * rule was "until this process has seen its own change land, whatever the controller deploys is not written here yet".
 * Now the history says what the controller deployed when the rollout started: an image that is neither that, nor the
 * rollout's, nor another rollout's of rollplane, was set outside rollplane, and the rollout stops without writing.
 */
import { describe, expect, it } from 'vitest';
import { ANNOTATION_HELD_BY } from '../../../src/kinds/agentPool/controller/names.js';
import type { ApiRequestInfo, KubeObject } from '../../../src/sim/types.js';
import { startService } from '../../helpers/child.js';
import { finishedRollout } from '../../helpers/crashPoint.js';
import { gqlData } from '../../helpers/graphql.js';
import { BUMP, CONTROLLER, helmUpgrade, NEW, OLD, ROLLOUT, type Rig, rigPerTest, serviceEnv, startRig } from './rig.js';

const t = rigPerTest();
/** A newer release than the rollout's image: writing NEW over it is the downgrade the attack saw. */
const HELM = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
const POOLS = 4;
const CHANGES = '{ events(filter: { types: [UpstreamControllerChanged] }, first: 50) { edges { node { rolloutId payload } } } }';

function controllerImage(r: Rig): string {
  const type = r.sim.store.resourceType('apps', 'deployments')!;
  const args: string[] = (r.sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name) as KubeObject).spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}

/** Holds every stored (not dry-run) IPPool patch until `release()`: rollplane's hold writes, as a member that hangs. */
function holdPoolPatches(r: Rig): { held: () => number; release: () => void } {
  const before = r.sim.api.hooks.beforeRequest;
  let held = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  r.sim.api.hooks = {
    ...r.sim.api.hooks,
    beforeRequest: async (info: ApiRequestInfo) => {
      await before?.(info);
      if (info.verb === 'patch' && info.resource.plural === 'ippools' && !info.dryRun) {
        held++;
        await released;
      }
    },
  };
  return { held: () => held, release };
}

async function changesOf(url: string): Promise<Array<{ rolloutId: string | null; payload: any }>> {
  return (await gqlData(url, CHANGES)).events.edges.map((e: any) => e.node);
}

describe('a helm upgrade of the vm-dhcp-controller before rollplane set the rollout image there', () => {
  it('fails the rollout without writing when the change came while the service was down (PENDING at the kill)', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    const env = serviceEnv(r);
    let service = await startService(env);
    t.service = service;
    // The controller's image as first seen is the history's baseline: what it deployed when the rollout starts.
    await r.waitFor('first sight recorded', async () => (await changesOf(service.url)).some((c) => c.payload.firstSeen === true));
    expect((await changesOf(service.url)).find((c) => c.payload.firstSeen)?.payload).toMatchObject({ oldImage: null, newImage: OLD, planned: false });
    const hold = holdPoolPatches(r);
    const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
    const id: string = bump.bumpAgentImage.rollout.id;
    await r.waitFor('a hold write in flight', () => hold.held() >= 1);
    service.child.kill('SIGKILL');
    await service.exited;
    helmUpgrade(r, HELM);
    hold.release();

    service = await startService(env);
    t.service = service;
    const done = await finishedRollout<{ state: string; message: string }>(service.url, id, ROLLOUT, 60_000);
    expect(done.state).toBe('FAILED');
    expect(done.message).toContain(`now deploys ${HELM}, neither ${NEW} nor ${OLD}`);
    expect(done.message).toContain('changed outside rollplane');
    // Nothing written over the helm upgrade: the controller keeps it, and rollplane recorded no change of its own.
    expect(controllerImage(r)).toBe(HELM);
    const changes = await changesOf(service.url);
    expect(changes.filter((c) => c.payload.planned === true)).toEqual([]);
    expect(changes.map((c) => c.payload)).toContainEqual(expect.objectContaining({ oldImage: OLD, newImage: HELM, planned: false }));
    for (let i = 1; i <= POOLS; i++) expect(r.agent(`net-${i}`)?.spec.containers[0].image, `net-${i}`).not.toBe(NEW);
  }, 120_000);

  it('fails the rollout without writing when the change came while its hold writes hung (no restart)', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    const service = await startService(serviceEnv(r));
    t.service = service;
    await r.waitFor('first sight recorded', async () => (await changesOf(service.url)).some((c) => c.payload.firstSeen === true));
    const hold = holdPoolPatches(r);
    const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
    const id: string = bump.bumpAgentImage.rollout.id;
    await r.waitFor('a hold write in flight', () => hold.held() >= 1);
    helmUpgrade(r, HELM);
    // The service saw the helm upgrade (it recorded it) before its hold write returns.
    await r.waitFor('the outside change recorded', async () => (await changesOf(service.url)).some((c) => c.payload.newImage === HELM));
    hold.release();

    const done = await finishedRollout<{ state: string; message: string }>(service.url, id, ROLLOUT, 60_000);
    expect(done.state).toBe('FAILED');
    expect(done.message).toContain(`now deploys ${HELM}, neither ${NEW} nor ${OLD}`);
    expect(controllerImage(r)).toBe(HELM);
    expect((await changesOf(service.url)).filter((c) => c.payload.planned === true)).toEqual([]);
    // The holds written before the stop came off again: nothing is left held by the failed rollout.
    await r.waitFor('holds undone', () =>
      Array.from({ length: POOLS }, (_, i) => r.pool(`net-${i + 1}`)).every((p) => !p?.metadata.annotations?.[ANNOTATION_HELD_BY]),
    );
    for (let i = 1; i <= POOLS; i++) expect(r.agent(`net-${i}`)?.spec.containers[0].image, `net-${i}`).not.toBe(NEW);
  }, 120_000);

  // Attack 18, H1: the false side. A helm upgrade made while rollplane was down, and a bump sent as soon as it listens:
  // the bump's plan already starts from the helm image, but the history records the change only at the restarted
  // reconciler's first look — here after the killed leader's Lease expires, well after the rollout started. That
  // first look's change may predate the rollout, so it is no outside change made before rollplane's write.
  it('does not fail a healthy rollout launched after a restart, before the restarted reconciler recorded a change made while it was down', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    // Elected: the restarted process leads (and looks) only once the killed one's Lease expired.
    const env = { ...serviceEnv(r), ROLLPLANE_LEADER_ELECT: 'true', ROLLPLANE_LEASE_DURATION_MS: '8000', ROLLPLANE_LEASE_RENEW_DEADLINE_MS: '6000' };
    let service = await startService(env);
    t.service = service;
    await r.waitFor('first sight recorded', async () => (await changesOf(service.url)).some((c) => c.payload.firstSeen === true));
    service.child.kill('SIGKILL');
    await service.exited;
    helmUpgrade(r, HELM);
    await r.waitFor('upstream moved every pool to the helm image', () =>
      Array.from({ length: POOLS }, (_, i) => r.readyAgents().get(`net-${i + 1}`)).every((a) => a?.spec.containers[0].image === HELM),
    );

    service = await startService(env);
    t.service = service;
    const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
    const bump = await gqlData(service.url, BUMP, { input: { image: NEWER, strategy: { maxUnavailable: '2', progressDeadlineSeconds: 3600 } } });
    const id: string = bump.bumpAgentImage.rollout.id;
    expect(bump.bumpAgentImage.rollout.fromVersion).toBe(HELM);
    // The bump came before the restarted process led: its change is recorded after the rollout started.
    expect((await changesOf(service.url)).some((c) => c.payload.newImage === HELM)).toBe(false);
    const done = await finishedRollout<{ state: string; message: string }>(service.url, id, ROLLOUT, 90_000);
    expect(done.state, done.message).toBe('SUCCEEDED');
    expect(controllerImage(r)).toBe(NEWER);
    expect((await changesOf(service.url)).map((c) => c.payload)).toContainEqual(
      expect.objectContaining({ oldImage: OLD, newImage: HELM, planned: false, detectedAtStartOf: expect.any(String) }),
    );
  }, 150_000);
});
