import { afterEach, describe, expect, it } from 'vitest';
import { BUMP, NEW, OLD, startRig, waitForRollout, type Rig } from './rig.js';
import { waitQuiet } from '../../helpers/quiet.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const POOLS = `query P($filter: AgentPoolFilter, $first: Int, $after: String) { agentPools(filter: $filter, first: $first, after: $after) {
  totalCount pageInfo { hasNextPage endCursor }
  edges { cursor node { namespace name networkName cidr paused held mode desiredImage runningImage agentRef agentUid agentReady
    conditions { type status reason message } } } } }`;

describe('bumpAgentImage through the GraphQL API', () => {
  it('upgrades every pool (upstream test plan): new image and new uid in agentPodRef, held pool untouched, maxUnavailable never exceeded', async () => {
    rig = await startRig({ fleet: 'pools=6,nodes=3', delays: { podReadyMs: 20, podTerminateMs: 10 } });
    const r = rig;
    // Hold net-6.
    const poolType = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const held = structuredClone(r.pool('net-6')!);
    held.metadata.annotations = { 'network.harvesterhci.io/hold-ippool-agent-upgrade': 'true' };
    r.sim.store.update(poolType, held);
    const heldUid = r.agent('net-6')!.metadata.uid;
    await r.waitFor('hold visible', async () => (await r.gql(`{ agentPool(namespace: "default", name: "net-6") { held } }`)).agentPool.held);
    const oldUids = new Map([1, 2, 3, 4, 5].map((i) => [`net-${i}`, r.agent(`net-${i}`)!.metadata.uid]));

    // maxUnavailable 2: at every change of the simulated cluster, at most 2 pools lack a Ready agent.
    let worst = 0;
    const unsubscribe = r.sim.store.subscribe(() => {
      worst = Math.max(worst, 6 - r.readyAgents().size);
    });
    const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '2' }, cause: { actor: 'ci', commit: 'abc123' } } });
    const payload = data.bumpAgentImage;
    expect(payload.created).toBe(true);
    // autoRollback is on unless turned off (issue 27).
    expect(payload.rollout.strategy).toEqual({ maxUnavailable: '2', canary: null, progressDeadlineSeconds: 600, failureThreshold: 1, autoRollback: true });
    expect(payload.plan.find((p: any) => p.name === 'net-6')).toMatchObject({ action: 'skip', reason: expect.stringContaining('held') });
    expect(payload.plan.filter((p: any) => p.action === 'change')).toHaveLength(5);
    const done = await waitForRollout(r, payload.rollout.id, ['SUCCEEDED', 'FAILED']);
    unsubscribe();
    expect(done.state).toBe('SUCCEEDED');
    expect(done.progress).toMatchObject({ total: 6, succeeded: 5, skipped: 1 });
    expect(worst).toBeGreaterThan(0);
    expect(worst).toBeLessThanOrEqual(2);

    for (let i = 1; i <= 5; i++) {
      const pod = r.agent(`net-${i}`)!;
      const pool = r.pool(`net-${i}`)!;
      expect(pod.spec.containers[0].image).toBe(NEW);
      expect(pool.status.agentPodRef.image).toBe(NEW);
      expect(pool.status.agentPodRef.uid).toBe(pod.metadata.uid);
      expect(pod.metadata.uid).not.toBe(oldUids.get(`net-${i}`));
    }
    expect(r.agent('net-6')!.metadata.uid).toBe(heldUid);
    expect(r.pool('net-6')!.status.agentPodRef.image).toBe(OLD);

    const pools = await r.gql(POOLS, { first: 4 });
    expect(pools.agentPools.totalCount).toBe(6);
    expect(pools.agentPools.pageInfo.hasNextPage).toBe(true);
    const rest = await r.gql(POOLS, { first: 4, after: pools.agentPools.pageInfo.endCursor });
    expect([...pools.agentPools.edges, ...rest.agentPools.edges].map((e: any) => e.node.name)).toEqual(['net-1', 'net-2', 'net-3', 'net-4', 'net-5', 'net-6']);
    expect(pools.agentPools.edges[0].node).toMatchObject({
      mode: 'DIRECT',
      desiredImage: NEW,
      runningImage: NEW,
      agentReady: true,
      agentRef: 'harvester-system/default-net-1-agent',
    });

    const pool = await r.gql(`{ agentPool(namespace: "default", name: "net-1") {
      revisions { edges { node { n version rollout { id } } } }
      history(first: 50) { edges { node { type payload } } } } }`);
    expect(pool.agentPool.revisions.edges.map((e: any) => e.node.version)).toContain(NEW);
    const recreated = pool.agentPool.history.edges.filter((e: any) => e.node.type === 'AgentRecreated');
    expect(recreated).toHaveLength(1);
    expect(recreated[0].node.payload).toMatchObject({ oldImage: OLD, newImage: NEW, reason: 'drift' });
    // Page by page, newest first, the same events as the one page.
    const HISTORY = `query ($after: String) { agentPool(namespace: "default", name: "net-1") { history(first: 1, after: $after) {
      pageInfo { hasNextPage endCursor } edges { cursor node { id } } } } }`;
    const whole = await r.gql(`{ agentPool(namespace: "default", name: "net-1") { history(first: 50) { edges { node { id } } } } }`);
    const paged: string[] = [];
    for (let after: string | null = null, more = true; more; ) {
      const page: any = (await r.gql(HISTORY, { after })).agentPool.history;
      paged.push(...page.edges.map((e: any) => e.node.id));
      more = page.pageInfo.hasNextPage;
      after = page.pageInfo.endCursor;
    }
    const ids = whole.agentPool.history.edges.map((e: any) => e.node.id);
    expect(ids.length).toBeGreaterThan(1);
    expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((a, b) => b - a));
    expect(paged).toEqual(ids);
    const drift = await r.gql(`{ drift(kind: AGENT_POOL) { totalCount } }`);
    expect(drift.drift.totalCount).toBe(0);
  });

  it('validates input: bad image, bad selector, bad maxUnavailable, downgrade', async () => {
    rig = await startRig();
    const r = rig;
    const fail = async (input: Record<string, unknown>) => {
      const err = await r.gql(BUMP, { input }).then(
        () => undefined,
        (e: { errors: any[] }) => e.errors[0],
      );
      return err;
    };
    expect(await fail({ image: 'Rancher/UPPER::x' })).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'input.image' } });
    expect(await fail({ image: NEW, pools: { labelSelector: 'a in (b' } })).toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'input.pools.labelSelector' },
    });
    expect(await fail({ image: NEW, strategy: { maxUnavailable: '0' } })).toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'input.strategy.maxUnavailable' },
    });
    expect(await fail({ image: NEW, strategy: { maxUnavailable: '150%' } })).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    expect(await fail({ image: 'rancher/harvester-vm-dhcp-agent:v0.2.9' })).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'input.image' } });
    const allowed = await r.gql(BUMP, { input: { image: 'rancher/harvester-vm-dhcp-agent:v0.2.9', allowDowngrade: true, dryRun: true } });
    expect(allowed.bumpAgentImage.dryRun).toBe(true);
  });

  it('dry run returns the plan and changes nothing', async () => {
    rig = await startRig();
    const r = rig;
    // Quiet: informers caught up with the simulator, no key queued, in progress or delayed; the start-up work is done.
    await waitQuiet(r.app.manager, r.sim.store);
    const before = { ...r.writes };
    const data = await r.gql(BUMP, { input: { image: NEW, dryRun: true, pools: { names: ['net-1', 'default/net-2'] } } });
    expect(data.bumpAgentImage).toMatchObject({ dryRun: true, created: false, rollout: { id: 'dry-run' } });
    expect(data.bumpAgentImage.plan.map((p: any) => p.name)).toEqual(['net-1', 'net-2']);
    // Whatever a dry run that was not dry had started (a write, an enqueued rollout) shows before the controllers are
    // quiet again.
    await waitQuiet(r.app.manager, r.sim.store);
    expect(r.writes).toEqual(before);
    expect((await r.gql(`{ rollouts { totalCount } }`)).rollouts.totalCount).toBe(0);
    expect(r.pool('net-1')!.status.agentPodRef.image).toBe(OLD);
  });

  it('50 concurrent identical mutations with one idempotency key create one rollout', async () => {
    rig = await startRig();
    const r = rig;
    await r.waitFor('pools listed', async () => (await r.gql(`{ agentPools { totalCount } }`)).agentPools.totalCount === 4);
    const input = { image: NEW, idempotencyKey: 'ci-run-42', strategy: { maxUnavailable: '1' } };
    const results = await Promise.all(Array.from({ length: 50 }, () => r.gql(BUMP, { input })));
    const ids = new Set(results.map((d) => d.bumpAgentImage.rollout.id));
    expect(ids.size).toBe(1);
    expect(results.filter((d) => d.bumpAgentImage.created)).toHaveLength(1);
    expect((await r.gql(`{ rollouts { totalCount } }`)).rollouts.totalCount).toBe(1);
    await waitForRollout(r, [...ids][0]!, ['SUCCEEDED']);
  });

  it('canary pauses after the first pools and resumes; abort cancels what was not admitted; rollback restores', async () => {
    rig = await startRig({ fleet: 'pools=5,nodes=2' });
    const r = rig;
    const bump = await r.gql(BUMP, { input: { image: NEW, strategy: { canary: 2, maxUnavailable: '1' } } });
    const paused = await waitForRollout(r, bump.bumpAgentImage.rollout.id, ['PAUSED']);
    expect(paused.progress).toMatchObject({ succeeded: 2, pending: 3 });
    expect([1, 2, 3, 4, 5].filter((i) => r.agent(`net-${i}`)!.spec.containers[0].image === NEW)).toEqual([1, 2]);
    await r.gql(`mutation { resumeRollout(id: "${bump.bumpAgentImage.rollout.id}") { state } }`);
    await waitForRollout(r, bump.bumpAgentImage.rollout.id, ['SUCCEEDED']);
    expect([1, 2, 3, 4, 5].every((i) => r.agent(`net-${i}`)!.spec.containers[0].image === NEW)).toBe(true);

    // Rollback: every pool back to the previous image, recreated once more.
    const rollback = await r.gql(`mutation { rollbackRollout(id: "${bump.bumpAgentImage.rollout.id}") { id state toVersion } }`);
    await waitForRollout(r, rollback.rollbackRollout.id, ['SUCCEEDED']);
    expect([1, 2, 3, 4, 5].every((i) => r.agent(`net-${i}`)!.spec.containers[0].image === OLD && r.pool(`net-${i}`)!.status.agentPodRef.image === OLD)).toBe(
      true,
    );
    const original = await r.gql(`{ rollout(id: "${bump.bumpAgentImage.rollout.id}") { state } }`);
    expect(original.rollout.state).toBe('ROLLED_BACK');

    // Abort during a canary pause: the rest is cancelled and stays on its image.
    const second = await r.gql(BUMP, { input: { image: NEW, strategy: { canary: 1 } } });
    await waitForRollout(r, second.bumpAgentImage.rollout.id, ['PAUSED']);
    await r.gql(`mutation { abortRollout(id: "${second.bumpAgentImage.rollout.id}", reason: "test") { state } }`);
    const aborted = await waitForRollout(r, second.bumpAgentImage.rollout.id, ['ABORTED']);
    expect(aborted.progress).toMatchObject({ succeeded: 1, cancelled: 4 });
    expect([1, 2, 3, 4, 5].filter((i) => r.agent(`net-${i}`)!.spec.containers[0].image === NEW)).toHaveLength(1);
  });

  it('a bad image fails the rollout after failureThreshold pools, touches no other pool, and autoRollback restores them', async () => {
    rig = await startRig({ fleet: 'pools=5,nodes=2' });
    const r = rig;
    const uids = new Map([1, 2, 3, 4, 5].map((i) => [i, r.agent(`net-${i}`)!.metadata.uid]));
    const bad = 'rancher/harvester-vm-dhcp-agent:bad-1';
    const bump = await r.gql(BUMP, { input: { image: bad, strategy: { maxUnavailable: '1', failureThreshold: 1, autoRollback: true } } });
    const failed = await waitForRollout(r, bump.bumpAgentImage.rollout.id, ['FAILED', 'ROLLED_BACK']);
    expect(failed.message ?? '').toMatch(/ImagePullBackOff|ErrImagePull|failed/);
    const targets = failed.targets.edges.map((e: any) => e.node);
    expect(targets.filter((t: any) => t.state === 'FAILED')).toHaveLength(1);
    expect(targets.filter((t: any) => t.state === 'CANCELLED')).toHaveLength(4);
    expect(targets.find((t: any) => t.state === 'FAILED').error).toMatch(/ImagePullBackOff|ErrImagePull/);
    // Pools never admitted still run their original agent.
    for (const t of targets.filter((x: any) => x.state === 'CANCELLED')) {
      const i = Number(t.name.slice(4));
      expect(r.agent(t.name)!.metadata.uid).toBe(uids.get(i));
      expect(r.pool(t.name)!.status.agentPodRef.image).toBe(OLD);
    }
    // autoRollback: the failed pool is back on the old image with a Ready agent.
    const failedPool = targets.find((t: any) => t.state === 'FAILED').name;
    await r.waitFor('failed pool restored', () => {
      const pod = r.readyAgents().get(failedPool);
      return pod?.spec.containers[0].image === OLD && r.pool(failedPool)!.status.agentPodRef.image === OLD;
    });
    await waitForRollout(r, bump.bumpAgentImage.rollout.id, ['ROLLED_BACK']);
  });
});
