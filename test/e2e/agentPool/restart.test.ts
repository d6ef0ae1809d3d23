import { describe, expect, it } from 'vitest';
import { gqlData } from '../../helpers/graphql.js';
import { startService } from '../../helpers/child.js';
import { finishedRollout } from '../../helpers/crashPoint.js';
import { waitServiceQuiet } from '../../helpers/serviceQuiet.js';
import { BUMP, helmUpgrade, NEW, ROLLOUT, rigPerTest, serviceEnv, startRig, agentCreationsPerPool } from './rig.js';

const t = rigPerTest();

describe.each([
  ['direct mode', ''],
  ['beside the vm-dhcp-controller', ',upstream=vm-dhcp'],
])('a service killed mid-rollout (%s)', (_mode, upstream) => {
  it('completes the rollout after a restart, recreating no pool twice and recording each recreation once', async () => {
    const POOLS = 8;
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=3${upstream}`, delays: { podReadyMs: 150, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    // Every agent pod created from here on, per pool: a pool recreated twice would show 2.
    const created = agentCreationsPerPool(r);
    const env = serviceEnv(r);
    let service = await startService(env);
    t.service = service;
    await r.waitFor('pools listed', async () => (await gqlData(service.url, '{ agentPools { totalCount } }')).agentPools.totalCount === POOLS);
    const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '2' } } });
    const id = bump.bumpAgentImage.rollout.id;
    // Kill it while pools are being recreated.
    await r.waitFor('rollout under way', () => [...created.values()].reduce((a, b) => a + b, 0) >= 3, 30_000);
    service.child.kill('SIGKILL');
    await service.exited;
    const before = new Map(created);
    expect([...before.values()].reduce((a, b) => a + b, 0)).toBeLessThan(POOLS);

    service = await startService(env);
    t.service = service;
    const url = service.url;
    const done = await finishedRollout<{ state: string; progress: { succeeded: number } }>(url, id, ROLLOUT, 60_000);
    expect(done.state).toBe('SUCCEEDED');
    expect(done.progress.succeeded).toBe(POOLS);
    for (let i = 1; i <= POOLS; i++) {
      expect(created.get(`net-${i}`)).toBe(1);
      expect(r.agent(`net-${i}`)!.spec.containers[0].image).toBe(NEW);
      expect(r.pool(`net-${i}`)!.status.agentPodRef).toMatchObject({ image: NEW, uid: r.agent(`net-${i}`)!.metadata.uid });
    }
    // Whatever the restarted service was still going to record, it has: its informers have seen the simulator's
    // current state and its queues hold nothing queued, in progress or delayed.
    await waitServiceQuiet(url, r.sim.store);
    const events = await gqlData(url, '{ events(filter: { types: [AgentRecreated] }, first: 100) { edges { node { rolloutId object { name } payload } } } }');
    const names = events.events.edges.map((e: any) => e.node.object.name).sort();
    expect(names).toEqual(Array.from({ length: POOLS }, (_, i) => `net-${i + 1}`).sort());
    // Each one is the rollout's, also those under way when the service died.
    for (const e of events.events.edges) expect(e.node.rolloutId, e.node.object.name).toBe(id);
  }, 120_000);
});

describe('a service restarted mid-rollout beside the vm-dhcp-controller', () => {
  // Review of attack 15 F2's fix: "the controller has deployed the rollout's image since it started" was this
  // process's memory. A helm upgrade of the controller while the service was down was then, after the restart, "not
  // written here yet": the rollout waited for its own change, and its prepare wrote the rollout's --image over the
  // helm upgrade. The history records the change (ControllerImageReconciler), so the restarted service knows.
  it('fails the rollout when the controller --image was changed outside rollplane while the service was down', async () => {
    const POOLS = 10;
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=3,upstream=vm-dhcp`, delays: { podReadyMs: 400, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    const env = serviceEnv(r);
    let service = await startService(env);
    t.service = service;
    await r.waitFor('pools listed', async () => (await gqlData(service.url, '{ agentPools { totalCount } }')).agentPools.totalCount === POOLS);
    // A deadline no test run reaches: failing at it would not show that the change was seen.
    const strategy = { maxUnavailable: '1', progressDeadlineSeconds: 3600 };
    const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy } });
    const id = bump.bumpAgentImage.rollout.id;
    await r.waitFor('one pool upgraded', async () => (await gqlData(service.url, ROLLOUT, { id })).rollout.progress.succeeded >= 1, 30_000);
    service.child.kill('SIGKILL');
    await service.exited;
    const OTHER = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
    helmUpgrade(r, OTHER);

    service = await startService(env);
    t.service = service;
    const done = await finishedRollout<{ state: string; message: string }>(service.url, id, ROLLOUT, 60_000);
    expect(done.state).toBe('FAILED');
    expect(done.message).toContain('changed outside rollplane');
    const changes = await gqlData(service.url, '{ events(filter: { types: [UpstreamControllerChanged] }, first: 10) { edges { node { payload } } } }');
    // Recorded as the outside change it was, never as rollplane's own.
    expect(changes.events.edges.map((e: any) => e.node.payload)).toContainEqual(expect.objectContaining({ oldImage: NEW, newImage: OTHER, planned: false }));
  }, 120_000);
});
