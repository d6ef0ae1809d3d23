/**
 * Attack 18, H2 and H3: writes to rollplane's own cluster whose answer never comes.
 * - H2: the write of the controller's --image timed out, the rollout gave up and took its holds off, and the write —
 *   delayed in a proxy, not lost — landed twelve seconds later: upstream moved every pool at once, beyond
 *   maxUnavailable, for a rollout that was over. Now the write lands only on the version of the Deployment it read, and
 *   a write whose answer was lost is fenced off (or found landed) before any hold comes off.
 * - H3: writes to `local` had no timeout: one hold write that hung kept its rollout PENDING for ever, and every
 *   agent-pool bump behind it (prepares run one at a time).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, request } from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANNOTATION_IMAGE_WRITE_FENCE } from '../../../src/kinds/agentPool/controller/ImageWriteFence.js';
import { ANNOTATION_HOLD_WRITE_FENCE } from '../../../src/kinds/agentPool/controller/PoolHoldWrites.js';
import { ANNOTATION_HELD_BY, ANNOTATION_HOLD } from '../../../src/kinds/agentPool/controller/names.js';
import type { ApiRequestInfo, KubeObject } from '../../../src/sim/types.js';
import { startService } from '../../helpers/child.js';
import { finishedRollout } from '../../helpers/crashPoint.js';
import { gqlData } from '../../helpers/graphql.js';
import { type MemberProxy, startMemberProxy } from '../../helpers/memberProxy.js';
import { until } from '../../helpers/until.js';
import { BUMP, CONTROLLER, NEW, OLD, ROLLOUT, type Rig, rigPerTest, serviceEnv, startRig } from './rig.js';

const t = rigPerTest();
const POOLS = 4;
/** Short, so that a lost answer is given up on soon; far longer than any answer of the simulator on a loaded machine. */
const TIMEOUT_MS = '2000';
const ABORT = 'mutation ($id: ID!) { abortRollout(id: $id) { state } }';
const STATE = 'query ($id: ID!) { rollout(id: $id) { state } }';

function controller(r: Rig): KubeObject {
  const type = r.sim.store.resourceType('apps', 'deployments')!;
  return r.sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name) as KubeObject;
}

function controllerImage(r: Rig): string {
  const args: string[] = controller(r).spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}

function heldPools(r: Rig): string[] {
  return Array.from({ length: POOLS }, (_, i) => `net-${i + 1}`).filter((name) => r.pool(name)?.metadata.annotations?.[ANNOTATION_HELD_BY] !== undefined);
}

/** A copy of the simulator's kubeconfig that reaches it through `proxy`. */
function kubeconfigThrough(r: Rig, proxy: MemberProxy): string {
  const file = path.join(path.dirname(r.databaseFile), 'kubeconfig-through-proxy');
  writeFileSync(file, readFileSync(r.sim.kubeconfigPath, 'utf8').split(r.sim.url).join(proxy.url));
  return file;
}

describe('a write to the local cluster whose answer is lost', () => {
  it('the --image write delayed past its timeout never lands after the rollout gave up, and no pool moves', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    // The proxy keeps the first --image write (a JSON patch of the controller's Deployment), unanswered.
    const late = keepFirstImageWrite(r);
    const proxy = await startMemberProxy(r.sim.url, { intercept: late.intercept });
    try {
      const env = { ...serviceEnv(r), KUBECONFIG: kubeconfigThrough(r, proxy), ROLLPLANE_KUBE_TIMEOUT_MS: TIMEOUT_MS };
      const service = await startService(env);
      t.service = service;
      const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      const id: string = bump.bumpAgentImage.rollout.id;
      await until('the --image write sent, its answer kept back', () => late.kept());
      expect(heldPools(r)).toHaveLength(POOLS);
      expect((await gqlData(service.url, ABORT, { id })).abortRollout.state).toBe('ABORTED');
      await until('the ended rollout took its holds off', () => heldPools(r).length === 0);
      // Its answer lost, the write was fenced off before any hold came off: a change of the Deployment since it was read.
      expect(controller(r).metadata.annotations?.[ANNOTATION_IMAGE_WRITE_FENCE]).toMatch(new RegExp(`^${id} `));
      const delivered = await late.deliver();
      // The write reaches the API server after all: on a Deployment changed since it was read, it is refused.
      expect(delivered).toBe(409);
      expect(controllerImage(r)).toBe(OLD);
      for (let i = 1; i <= POOLS; i++) expect(r.agent(`net-${i}`)?.spec.containers[0].image, `net-${i}`).toBe(OLD);
      expect((await gqlData(service.url, STATE, { id })).rollout.state).toBe('ABORTED');
    } finally {
      await proxy.close();
    }
  }, 120_000);

  // Attack 20, F5: the process that sent the write is SIGKILLed while it waits; the restarted one knows nothing of it.
  it('a --image write of a killed process, delivered after the restarted one ended the rollout, is fenced off too', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    const late = keepFirstImageWrite(r);
    const proxy = await startMemberProxy(r.sim.url, { intercept: late.intercept });
    try {
      // A bound far longer than the test: the first process never gives up on the write before it is killed.
      const env = { ...serviceEnv(r), KUBECONFIG: kubeconfigThrough(r, proxy), ROLLPLANE_KUBE_TIMEOUT_MS: '600000' };
      let service = await startService(env);
      t.service = service;
      const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      const id: string = bump.bumpAgentImage.rollout.id;
      await until('the --image write sent, its answer kept back', () => late.kept());
      service.child.kill('SIGKILL');
      await service.exited;
      // Aborted before any process prepares it again (as behind a leader's Lease): through a replica without controllers.
      service = await startService({ ...env, ROLLPLANE_CONTROLLERS: 'off' });
      t.service = service;
      expect((await gqlData(service.url, ABORT, { id })).abortRollout.state).toBe('ABORTED');
      service.child.kill('SIGKILL');
      await service.exited;
      service = await startService(env);
      t.service = service;
      await until('the ended rollout took its holds off', () => heldPools(r).length === 0);
      expect(controller(r).metadata.annotations?.[ANNOTATION_IMAGE_WRITE_FENCE]).toMatch(new RegExp(`^${id} `));
      expect(await late.deliver()).toBe(409);
      expect(controllerImage(r)).toBe(OLD);
      for (let i = 1; i <= POOLS; i++) expect(r.agent(`net-${i}`)?.spec.containers[0].image, `net-${i}`).toBe(OLD);
    } finally {
      await proxy.close();
    }
  }, 120_000);

  // Attack 20, F3: an abort while a release is merely slow (answered in time) recorded the target CANCELLED while its
  // pool moved, and the abort's revert then moved it back.
  it('an abort while a release is on its way records that target admitted: it finishes, and nothing is moved back under it', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    let slowing = false;
    let slowed = 0;
    let answered = 0;
    const before = r.sim.api.hooks.beforeRequest;
    r.sim.api.hooks = {
      ...r.sim.api.hooks,
      beforeRequest: async (info: ApiRequestInfo) => {
        await before?.(info);
        if (slowing && info.verb === 'patch' && info.resource.plural === 'ippools' && !info.subresource && !info.dryRun) {
          slowed++;
          await new Promise((resolve) => setTimeout(resolve, 1_500));
          answered++;
        }
      },
    };
    const service = await startService(serviceEnv(r));
    t.service = service;
    const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
    const id: string = bump.bumpAgentImage.rollout.id;
    // Every hold is in and the controller deploys the new image: the next IPPool patch is the first release.
    await until('the rollout prepared', () => heldPools(r).length === POOLS && controllerImage(r) === NEW);
    slowing = true;
    await until('a release on its way', () => slowed >= 1);
    expect((await gqlData(service.url, ABORT, { id })).abortRollout.state).toBe('ABORTED');
    let last = '';
    const targets = await until(
      () => `the released target finished (targets ${last}; held ${heldPools(r).join(', ')})`,
      async () => {
        const rollout = (await gqlData(service.url, ROLLOUT, { id })).rollout;
        const nodes: { name: string; state: string; error: string | null }[] = rollout.targets.edges.map((e: any) => e.node);
        last = nodes.map((n) => `${n.name} ${n.state}${n.error ? ` (${n.error})` : ''}`).join(', ');
        // The release answered, then its target finished (CANCELLED for good without the record from CANCELLED).
        return answered >= 1 && nodes.some((n) => n.state === 'SUCCEEDED') && !nodes.some((n) => n.state === 'PROGRESSING') ? nodes : undefined;
      },
    );
    const moved = targets.filter((n) => n.state === 'SUCCEEDED').map((n) => n.name);
    expect(moved, last).toHaveLength(1);
    expect(targets.filter((n) => n.state === 'CANCELLED')).toHaveLength(POOLS - 1);
    // The moved pool stays on the new image (a rollback's to decide), and the controller with it: the others never left
    // the old one, and stay held against it (drift shows them).
    expect(controllerImage(r)).toBe(NEW);
    expect(heldPools(r).sort()).toEqual(
      targets
        .filter((n) => n.state === 'CANCELLED')
        .map((n) => n.name)
        .sort(),
    );
    for (let i = 1; i <= POOLS; i++) {
      const name = `net-${i}`;
      expect(r.agent(name)?.spec.containers[0].image, name).toBe(moved.includes(name) ? NEW : OLD);
    }
  }, 120_000);

  it('a hold write that hangs is given up after its timeout and fenced: the rollout can be aborted, the next bump runs, the late write cannot land, and a late hold of an ended rollout comes off', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    // The first stored IPPool patch (a hold) is kept by the proxy, unanswered, and delivered only when told.
    const late = delayFirst(r, (req) => req.method === 'PATCH' && /\/ippools\/[^/?]+(\?|$)/.test(req.url ?? '') && !req.url!.includes('dryRun'));
    const proxy = await startMemberProxy(r.sim.url, { intercept: late.intercept });
    try {
      const env = { ...serviceEnv(r), KUBECONFIG: kubeconfigThrough(r, proxy), ROLLPLANE_KUBE_TIMEOUT_MS: TIMEOUT_MS };
      const service = await startService(env);
      t.service = service;
      const first = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      const stuck: string = first.bumpAgentImage.rollout.id;
      await until('a hold write kept back', () => late.kept());
      expect((await gqlData(service.url, ABORT, { id: stuck })).abortRollout.state).toBe('ABORTED');
      const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
      const next = await gqlData(service.url, BUMP, { input: { image: NEWER, strategy: { maxUnavailable: '2', progressDeadlineSeconds: 3600 } } });
      const done = await finishedRollout<{ state: string; message: string }>(service.url, next.bumpAgentImage.rollout.id, ROLLOUT, 90_000);
      expect(done.state, done.message).toBe('SUCCEEDED');
      expect(controllerImage(r)).toBe(NEWER);
      // The kept hold write is delivered now, long after its rollout ended: it was conditional on the pool's version,
      // which rollplane's fence moved on when the answer did not come, so it cannot land (attack 20, F2). Without the
      // fence and the precondition it answered 200 and held the pool for the ended rollout.
      const pool = late.pool();
      expect(await late.deliver()).toBe(409);
      expect(heldPools(r)).toEqual([]);
      // A hold that lands anyway (sent by a process that died before it could fence it, which nothing remembers):
      // on a pool that runs the controller's image it holds nothing back, and rollplane takes it off (attack 18, M1).
      const type = r.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
      const held = structuredClone(r.pool(pool)!);
      held.metadata.annotations = { ...held.metadata.annotations, [ANNOTATION_HOLD]: 'true', [ANNOTATION_HELD_BY]: stuck };
      r.sim.store.update(type, held);
      expect(heldPools(r)).toEqual([pool]);
      await until('the late hold taken off', () => heldPools(r).length === 0);
      expect(r.pool(pool)?.metadata.annotations?.['network.harvesterhci.io/hold-ippool-agent-upgrade']).toBeUndefined();
      expect(r.agent(pool)?.spec.containers[0].image).toBe(NEWER);
    } finally {
      await proxy.close();
    }
  }, 120_000);

  // Attack 20, F1: a release whose answer was lost landed during the next rollout, on a pool that rollout held, and
  // upstream moved it beside that rollout's own admission (two agents down under maxUnavailable 1).
  it('a release whose answer was lost is fenced: delivered during the next rollout, it moves no pool', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
    let armed = false;
    const late = delayFirst(r, (req) => armed && req.method === 'PATCH' && /\/ippools\/[^/?]+(\?|$)/.test(req.url ?? '') && !req.url!.includes('dryRun'));
    // The lost release is delivered when the next rollout releases its first pool: every pool is held by it then.
    let delivered: Promise<number> | undefined;
    const earlier = r.sim.api.hooks.beforeRequest;
    r.sim.api.hooks = {
      ...r.sim.api.hooks,
      beforeRequest: async (info: ApiRequestInfo) => {
        await earlier?.(info);
        const release = info.verb === 'patch' && info.resource.plural === 'ippools' && !info.subresource && !info.dryRun;
        if (release && !delivered && late.kept() && controllerImage(r) === NEWER && heldPools(r).length === POOLS) {
          delivered = late.deliver();
          await delivered;
        }
      },
    };
    const proxy = await startMemberProxy(r.sim.url, { intercept: late.intercept });
    try {
      const env = { ...serviceEnv(r), KUBECONFIG: kubeconfigThrough(r, proxy), ROLLPLANE_KUBE_TIMEOUT_MS: TIMEOUT_MS };
      const service = await startService(env);
      t.service = service;
      const first = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      // Every hold is in and the controller deploys the new image: the next IPPool patch is the first release.
      await until('the first rollout prepared', () => heldPools(r).length === POOLS && controllerImage(r) === NEW);
      armed = true;
      await until('a release sent, its answer kept back', () => late.kept());
      const keptAt = Date.now();
      const pool = late.pool();
      const done = await finishedRollout<{ state: string; message: string }>(service.url, first.bumpAgentImage.rollout.id, ROLLOUT, 90_000);
      expect(done.state, done.message).toBe('SUCCEEDED');
      // Its recreation is dated from the release sent again after the timeout, not from the one kept back (attack 21,
      // F3: the first try's time was kept, and the history showed the agent down for the whole wait).
      const recreatedFirst = await gqlData(
        service.url,
        '{ events(filter: { types: [AgentRecreated] }, first: 100) { edges { node { object { name } payload } } } }',
        {},
      );
      const mine = recreatedFirst.events.edges.map((e: any) => e.node).find((e: any) => e.object.name === pool);
      expect(Date.parse(mine.payload.deletedAt)).toBeGreaterThan(keptAt + Number(TIMEOUT_MS) / 2);
      // Its answer lost, the release was settled with a fence (a change of the pool since it was read), then sent again.
      expect(r.pool(pool)?.metadata.annotations?.[ANNOTATION_HOLD_WRITE_FENCE]).toBeDefined();
      expect(r.agent(pool)?.spec.containers[0].image).toBe(NEW);

      const next = await gqlData(service.url, BUMP, { input: { image: NEWER, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      const after = await finishedRollout<{ state: string; message: string }>(service.url, next.bumpAgentImage.rollout.id, ROLLOUT, 90_000);
      expect(after.state, after.message).toBe('SUCCEEDED');
      // Refused: without the precondition it answered 200, and upstream moved the pool outside the rollout's admission.
      expect(delivered).toBeDefined();
      expect(await delivered).toBe(409);
      const events = await gqlData(
        service.url,
        '{ events(filter: { types: [AgentRecreated] }, first: 100) { edges { node { object { name } payload } } } }',
        {},
      );
      const unplanned = events.events.edges.map((e: any) => e.node).filter((e: any) => e.payload.reason !== 'rollout');
      expect(unplanned).toEqual([]);
      for (let i = 1; i <= POOLS; i++) expect(r.agent(`net-${i}`)?.spec.containers[0].image, `net-${i}`).toBe(NEWER);
    } finally {
      await proxy.close();
    }
  }, 150_000);

  // Attack 21, F1: a newer rollout superseded one whose release was on its way (slow, not lost): the newer one took the
  // pools over without writing to them, so the old release still matched the pool's version and landed (or, refused,
  // was sent again), and that pool went down beside the newer rollout's own admission.
  it('a release on its way when a newer rollout supersedes its rollout does not land', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
    let slowing = false;
    let slowed: string | undefined;
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const earlier = r.sim.api.hooks.beforeRequest;
    r.sim.api.hooks = {
      ...r.sim.api.hooks,
      beforeRequest: async (info: ApiRequestInfo) => {
        await earlier?.(info);
        if (slowing && !slowed && info.verb === 'patch' && info.resource.plural === 'ippools' && !info.subresource && !info.dryRun) {
          slowed = info.name;
          await held; // the first release stays on its way until the newer rollout has prepared
        }
      },
    };
    const service = await startService(serviceEnv(r));
    t.service = service;
    const first = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
    await until('the first rollout prepared', () => heldPools(r).length === POOLS && controllerImage(r) === NEW);
    slowing = true;
    await until('a release on its way', () => slowed !== undefined);
    const next = await gqlData(service.url, BUMP, {
      input: { image: NEWER, supersede: true, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } },
    });
    await until('the newer rollout prepared', () => controllerImage(r) === NEWER && heldPools(r).includes(slowed!));
    expect((await gqlData(service.url, STATE, { id: first.bumpAgentImage.rollout.id })).rollout.state).toBe('ABORTED');
    release();
    const done = await finishedRollout<{ state: string; message: string }>(service.url, next.bumpAgentImage.rollout.id, ROLLOUT, 90_000);
    expect(done.state, done.message).toBe('SUCCEEDED');
    // Without the fix: the slowed pool recorded `unplanned`, down together with the newer rollout's first admission.
    await expectOneAtATime(r, service.url, next.bumpAgentImage.rollout.id, NEWER);
  }, 150_000);

  // Attack 22, G2 and G3: with a slow API server, a supersede raced the older rollout's writes. G2: the older release
  // landed before the newer rollout's adoption write, which was refused and not held again; G3: the superseded rollout
  // still wrote its image and its finish took the newer one's fresh holds off — every pool moved at once.
  for (const [name, slow] of [
    ['G2: the older release lands before the adoption', (n: number) => (n === 1 ? 1_000 : n === 2 ? 2_500 : 0)],
    ["G3: both rollouts' hold writes are slow", (n: number) => (n <= 4 ? 1_500 : 0)],
  ] as const) {
    it(`a supersede racing slow IPPool writes moves no pool outside an admission (attack 22, ${name})`, async () => {
      t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
      const r = t.rig;
      const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
      let armed = false;
      let seen = 0;
      const earlier = r.sim.api.hooks.beforeRequest;
      r.sim.api.hooks = {
        ...r.sim.api.hooks,
        beforeRequest: async (info: ApiRequestInfo) => {
          await earlier?.(info);
          if (!armed || info.verb !== 'patch' || info.resource.plural !== 'ippools' || info.subresource || info.dryRun || info.name !== 'net-3') return;
          const delay = slow(++seen);
          if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        },
      };
      const service = await startService(serviceEnv(r));
      t.service = service;
      const input = (image: string, supersede = false) => ({ input: { image, supersede, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      let first: any;
      if (name.startsWith('G2')) {
        // The older rollout prepared; its release of net-3 is on its way when the newer one supersedes it.
        first = await gqlData(service.url, BUMP, input(NEW));
        await until('the first rollout prepared', () => heldPools(r).length === POOLS && controllerImage(r) === NEW);
        armed = true;
      } else {
        // The older rollout's hold of net-3 is on its way when the newer one supersedes it.
        armed = true;
        first = await gqlData(service.url, BUMP, input(NEW));
      }
      await until('a write to net-3 on its way', () => seen >= 1);
      const next = await gqlData(service.url, BUMP, input(NEWER, true));
      const done = await finishedRollout<{ state: string; message: string }>(service.url, next.bumpAgentImage.rollout.id, ROLLOUT, 90_000);
      expect(done.state, done.message).toBe('SUCCEEDED');
      expect((await gqlData(service.url, STATE, { id: first.bumpAgentImage.rollout.id })).rollout.state).toBe('ABORTED');
      await expectOneAtATime(r, service.url, next.bumpAgentImage.rollout.id, NEWER);
    }, 150_000);
  }
});

/**
 * Every recreation recorded was a rollout's (none `unplanned`), the rollout's own ones never overlapped (maxUnavailable
 * 1), and every agent ended on `image`.
 */
async function expectOneAtATime(r: Rig, url: string, rolloutId: string, image: string): Promise<void> {
  const events = await gqlData(url, '{ events(filter: { types: [AgentRecreated] }, first: 100) { edges { node { object { name } rolloutId payload } } } }', {});
  const recreations = events.events.edges.map((e: any) => e.node);
  expect(recreations.filter((e: any) => e.payload.reason !== 'rollout')).toEqual([]);
  const mine = recreations.filter((e: any) => e.rolloutId === rolloutId);
  for (const a of mine)
    for (const b of mine) {
      if (a === b) continue;
      const overlap = Date.parse(a.payload.deletedAt) < Date.parse(b.payload.readyAt) && Date.parse(b.payload.deletedAt) < Date.parse(a.payload.readyAt);
      expect(overlap, `${a.object.name} and ${b.object.name} down together under maxUnavailable 1`).toBe(false);
    }
  for (let i = 1; i <= POOLS; i++) expect(r.agent(`net-${i}`)?.spec.containers[0].image, `net-${i}`).toBe(image);
}

/** delayFirst for the first --image write: a JSON patch of the controller's Deployment (not a dry run). */
function keepFirstImageWrite(r: Rig) {
  const deployment = `/apis/apps/v1/namespaces/${CONTROLLER.namespace}/deployments/${CONTROLLER.name}`;
  return delayFirst(
    r,
    (req) =>
      req.method === 'PATCH' && req.url?.split('?')[0] === deployment && !req.url.includes('dryRun') && !!req.headers['content-type']?.includes('json-patch'),
  );
}

/**
 * Keeps the first request `matches` picks, unanswered, and delivers it whole to the simulator when told: the request
 * was sent and will land, its answer never reaches rollplane.
 */
function delayFirst(r: Rig, matches: (req: IncomingMessage) => boolean) {
  let kept: { method: string; url: string; headers: IncomingMessage['headers']; body: Buffer } | undefined;
  return {
    kept: () => kept !== undefined,
    /** The IPPool's name in the kept request's path. */
    pool: () => decodeURIComponent(kept!.url.split('?')[0]!.split('/').pop()!),
    intercept(req: IncomingMessage): boolean {
      if (kept || !matches(req)) return false;
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        kept = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
      });
      return true;
    },
    deliver: () =>
      new Promise<number>((resolve, reject) => {
        const { method, url, headers, body } = kept!;
        const sent = request(`${r.sim.url}${url}`, { method, headers }, (answer) => {
          answer.resume();
          resolve(answer.statusCode ?? 0);
        });
        sent.on('error', reject);
        sent.end(body);
      }),
  };
}
