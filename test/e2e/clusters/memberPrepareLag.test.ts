import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type StoredEvent } from '../../../src/domain/events.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { MEMBER_FLEET_ENV, memberPool, registerMembers } from '../../helpers/memberFleet.js';
import { scrape, type Sample } from '../../helpers/promText.js';
import { until } from '../../helpers/until.js';
import { CONTROLLER, helmUpgrade } from '../agentPool/rig.js';

/**
 * Attack 15, F2: beside a member's vm-dhcp-controller, the engine records a member's targets PROGRESSING before the
 * member's target executor has made the rollout's writes there (prepare: the holds and the controller's --image). When
 * those writes lag — the member was unreachable, or its API server refuses them for a while and the executor retries —
 * the member's caches still show the controller on the image the rollout started from. That is not a change made
 * outside rollplane: the rollout must wait for its own write, not fail, and end SUCCEEDED once the write lands.
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';

/** The sum of a metric's samples whose `label` is `value`. */
function sum(samples: readonly Sample[], name: string, value: string, label = 'controller'): number {
  return samples.filter((s) => s.name === name && s.labels[label] === value).reduce((total, s) => total + s.value, 0);
}

describe("a member's prepare that lags the rollout's admissions", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member prepare lag '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: [{ name: 'edge-1', fleet: 'pools=2,nodes=2,peers=0,upstream=vm-dhcp' }] });
    registerMembers(dir, fleet, ['edge-1'], () => ({ tier: 'edge' }));
    // The member is cut off by refusing connections (noticed at once), never by silence: a request timeout as long as
    // the product's keeps a loaded machine's slow answer from reading as UNREACHABLE.
    const env = { ...MEMBER_FLEET_ENV, ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS: '10000', ROLLPLANE_SIM_FLEET: 'pools=1,nodes=1' };
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env });
    await until('edge-1 driven by its own runtime', () =>
      app.memberRuntimes?.snapshot().some((r) => r.cluster === 'edge-1' && r.running && r.kinds.includes('AGENT_POOL')),
    );
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for its own --image write instead of failing as "changed outside rollplane", then SUCCEEDS', async () => {
    const sim = fleet.clusters.get('edge-1')!.simulator;
    // The member's API server refuses every Deployment patch but dry runs: the bump's preflight passes, and no prepare
    // can set the controller's image — so the engine cannot have prepared edge-1 before it is cut off below.
    sim.faults.set({ errorRate: { patch: 1 }, resources: ['deployments'], dryRuns: false });

    const seen: StoredEvent[] = [];
    const unsubscribe = app.bus.subscribe((event) => {
      if (event.cluster === 'edge-1' || event.type === EventType.RolloutStateChanged) seen.push(event);
    });
    const ended = () => seen.find((e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED'].includes(String(e.payload.to)));
    try {
      const res = await gql(app.url, `mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }`, {
        input: { image: NEW, memberClusters: { names: ['edge-1'] }, strategy: { maxUnavailable: '2', progressDeadlineSeconds: 600, autoRollback: false } },
      });
      expect(res.errors).toBeUndefined();
      const id: string = res.data.bumpAgentImage.rollout.id;
      // Cut off: once nobody drives edge-1, the rollout starts without its writes there and admits its targets in the
      // history (the member's executor is to write them when it is back).
      await fleet.set('edge-1', 'unreachable');
      await until('edge-1 targets admitted', () => seen.filter((e) => e.type === EventType.TargetStateChanged && e.payload.to === 'PROGRESSING').length === 2);

      // Back, still refusing the write: its caches show the controller on the old image while the executor retries.
      await fleet.set('edge-1', 'ready');
      await until('edge-1 driven again', () => app.memberRuntimes?.snapshot().some((r) => r.cluster === 'edge-1' && r.running));
      const errorsBack = sim.faults.stats().errors;
      const passes = async () => sum(await scrape(new URL('/metrics', app.url)), 'controller_runtime_reconcile_total', 'rollouts');
      const passesBack = await passes();
      // The engine passed over the rollout several times meanwhile, each time with edge-1's caches synced and showing
      // the old image, and the executor's write was refused again and again.
      await until('the write refused three more times', () => sim.faults.stats().errors - errorsBack >= 3 || ended());
      await until('three more engine passes', async () => (await passes()) - passesBack >= 3 || ended());
      const during = await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state message targets { edges { node { state error } } } } }', {
        id,
      });
      expect(during.data.rollout).toMatchObject({ state: 'PROGRESSING', message: null });
      // Each waiting target says why, while it waits (attack 17, L2): the member refused rollplane's write.
      for (const { node } of during.data.rollout.targets.edges) {
        expect(node.state).toBe('PROGRESSING');
        expect(node.error).toMatch(/^waiting: rollplane's last write here failed at \d{4}-[^ ]+Z: /);
      }

      // The member takes writes again: the executor's retry sets the image, upstream replaces the agents.
      sim.faults.set({});
      await until('the rollout ended', ended);
      expect(ended()!.payload).toMatchObject({ to: 'SUCCEEDED' });
      const after = await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { targets { edges { node { state error } } } } }', { id });
      expect(after.data.rollout.targets.edges.map((e: any) => e.node)).toEqual([
        { state: 'SUCCEEDED', error: null },
        { state: 'SUCCEEDED', error: null },
      ]);
      for (const name of ['net-1', 'net-2']) expect(memberPool(fleet, 'edge-1', name)?.status.agentPodRef.image).toBe(NEW);
      // The controller's change is rollplane's own, recorded as planned, once; nothing put it back.
      const changes = seen.filter((e) => e.type === EventType.UpstreamControllerChanged);
      expect(changes.map((e) => [e.payload.oldImage, e.payload.newImage, e.payload.planned])).toEqual([[OLD, NEW, true]]);
    } finally {
      unsubscribe();
      sim.faults.set({});
      await fleet.set('edge-1', 'ready');
    }
  });

  it("retries a member's server errors in the preflight of a PENDING rollout instead of failing it (attack 16, G2)", async () => {
    const sim = fleet.clusters.get('edge-1')!.simulator;
    const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
    const seen: StoredEvent[] = [];
    let errorsAtLaunch = -1;
    // From the moment the rollout is stored: every IPPool patch of edge-1 (the preflight's dry-run holds too) is a 500.
    const unsubscribe = app.bus.subscribe((event) => {
      if (event.type !== EventType.RolloutStateChanged) return;
      if (event.payload.to === 'PENDING' && errorsAtLaunch < 0) {
        errorsAtLaunch = sim.faults.stats().errors;
        sim.faults.set({ errorRate: { patch: 1 }, resources: ['ippools.network.harvesterhci.io'] });
      }
      seen.push(event);
    });
    const ended = () => seen.find((e) => ['SUCCEEDED', 'FAILED'].includes(String(e.payload.to)));
    try {
      // Refused at launch by the member's preflight (faults from now on, dry runs included): the error names the
      // member, since `default/net-1` is in every cluster; nothing is created.
      sim.faults.set({ errorRate: { patch: 1 }, resources: ['ippools.network.harvesterhci.io'] });
      const refused = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
        input: { image: NEWER, memberClusters: { names: ['edge-1'] }, strategy: { maxUnavailable: '2', autoRollback: false } },
      });
      expect(refused.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
      expect(refused.errors?.[0]?.message).toMatch(/^in member cluster edge-1: /);
      expect(seen).toEqual([]);
      sim.faults.set({});
      const res = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
        input: { image: NEWER, memberClusters: { names: ['edge-1'] }, strategy: { maxUnavailable: '2', autoRollback: false } },
      });
      expect(res.errors).toBeUndefined();
      // The engine tried three times against the failing server, and the rollout is still waiting to start.
      await until('three refused preflights', () => (errorsAtLaunch >= 0 && sim.faults.stats().errors - errorsAtLaunch >= 3) || ended());
      expect(ended()).toBeUndefined();
      sim.faults.set({});
      await until('the rollout ended', ended);
      expect(ended()!.payload).toMatchObject({ to: 'SUCCEEDED' });
      for (const name of ['net-1', 'net-2']) expect(memberPool(fleet, 'edge-1', name)?.status.agentPodRef.image).toBe(NEWER);
    } finally {
      unsubscribe();
      sim.faults.set({});
    }
  });

  it('waits for its own write in a member that starts from another image than the rollout (attack 16, N1)', async () => {
    // edge-1 deploys v0.3.2 (the tests above); local's pool runs v0.3.0: the rollout's from-version is not edge-1's.
    const sim = fleet.clusters.get('edge-1')!.simulator;
    const NEXT = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
    sim.faults.set({ errorRate: { patch: 1 }, resources: ['deployments'], dryRuns: false });
    const errorsBefore = sim.faults.stats().errors;
    const seen: StoredEvent[] = [];
    const unsubscribe = app.bus.subscribe((event) => {
      if (event.type === EventType.RolloutStateChanged || event.type === EventType.TargetStateChanged) seen.push(event);
    });
    const ended = () => seen.find((e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED'].includes(String(e.payload.to)));
    try {
      const res = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id fromVersion } } }', {
        input: {
          image: NEXT,
          memberClusters: { names: ['local', 'edge-1'] },
          strategy: { maxUnavailable: '3', progressDeadlineSeconds: 600, autoRollback: false },
        },
      });
      expect(res.errors).toBeUndefined();
      expect(res.data.bumpAgentImage.rollout.fromVersion).not.toBe('rancher/harvester-vm-dhcp-agent:v0.3.2');
      // Admitted everywhere, local's pool done, edge-1's write refused three times: still going, nothing blamed.
      await until('edge-1 admitted and its write refused three times', () => sim.faults.stats().errors - errorsBefore >= 3 || ended());
      await until(
        'local done',
        () => seen.some((e) => e.type === EventType.TargetStateChanged && e.cluster === 'local' && e.payload.to === 'SUCCEEDED') || ended(),
      );
      expect(ended()).toBeUndefined();
      sim.faults.set({});
      await until('the rollout ended', ended);
      expect(ended()!.payload).toMatchObject({ to: 'SUCCEEDED' });
      for (const name of ['net-1', 'net-2']) expect(memberPool(fleet, 'edge-1', name)?.status.agentPodRef.image).toBe(NEXT);
    } finally {
      unsubscribe();
      sim.faults.set({});
    }
  });

  it("fails a target whose member never takes rollplane's write at its deadline, saying the write failed (attack 16, G1)", async () => {
    // After the tests above edge-1 deploys v0.3.3. Its API server refuses every Deployment patch but dry runs, for good.
    const sim = fleet.clusters.get('edge-1')!.simulator;
    sim.faults.set({ errorRate: { patch: 1 }, resources: ['deployments'], dryRuns: false });
    const failed: StoredEvent[] = [];
    const unsubscribe = app.bus.subscribe((event) => {
      if (event.type === EventType.TargetFailed && event.cluster === 'edge-1') failed.push(event);
    });
    try {
      const res = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
        input: {
          image: 'rancher/harvester-vm-dhcp-agent:v0.3.4',
          memberClusters: { names: ['edge-1'] },
          strategy: { maxUnavailable: '2', progressDeadlineSeconds: 5, autoRollback: false },
        },
      });
      expect(res.errors).toBeUndefined();
      await until('both edge-1 targets failed', () => failed.length === 2, { timeoutMs: 60_000 });
      for (const event of failed) {
        // What it waited for, and why that never came: the member refused rollplane's write.
        expect(String(event.payload.error)).toMatch(/^not converged within the progress deadline of 5s: /);
        expect(String(event.payload.error)).toMatch(/rollplane's last write there failed at \d{4}-\d\d-\d\dT[^:]+:\d\d:\d\d\.\d+Z: /);
      }
    } finally {
      unsubscribe();
      sim.faults.set({});
    }
  });

  it("never writes over a helm upgrade made while the member's first write hung (attack 17, H1)", async () => {
    // edge-1 deploys v0.3.3 (the tests above), once the last one's rollout ended (its targets failed first, and until it
    // ends its write is retried). Its IPPool writes (the holds, not their dry runs) hang until released.
    await until('no rollout active', async () => {
      const active = await gql(app.url, '{ rollouts(filter: { states: [PENDING, PROGRESSING, PAUSED] }) { totalCount } }');
      return active.data.rollouts.totalCount === 0;
    });
    const sim = fleet.clusters.get('edge-1')!.simulator;
    const TARGET = 'rancher/harvester-vm-dhcp-agent:v0.3.6';
    const HELM = 'rancher/harvester-vm-dhcp-agent:v0.3.7';
    const before = sim.api.hooks.beforeRequest;
    let held = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    sim.api.hooks = {
      ...sim.api.hooks,
      beforeRequest: async (info) => {
        await before?.(info);
        if (info.verb === 'patch' && info.resource.plural === 'ippools' && !info.dryRun) {
          held++;
          await released;
        }
      },
    };
    const seen: StoredEvent[] = [];
    const unsubscribe = app.bus.subscribe((event) => {
      if (event.cluster === 'edge-1' || event.type === EventType.RolloutStateChanged) seen.push(event);
    });
    const ended = () => seen.find((e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED'].includes(String(e.payload.to)));
    try {
      const res = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
        input: { image: TARGET, memberClusters: { names: ['edge-1'] }, strategy: { maxUnavailable: '2', progressDeadlineSeconds: 600, autoRollback: false } },
      });
      expect(res.errors).toBeUndefined();
      await until('a hold write of edge-1 in flight', () => held >= 1);
      helmUpgrade({ sim }, HELM);
      await until('the helm upgrade recorded', () => seen.some((e) => e.type === EventType.UpstreamControllerChanged && e.payload.newImage === HELM));
      release();
      await until('the rollout ended', ended);
      expect(ended()!.payload).toMatchObject({ to: 'FAILED' });
      expect(String(ended()!.payload.message)).toContain(`now deploys ${HELM}, neither ${TARGET} nor`);
      // Nothing written over it: the controller keeps the helm upgrade's image, and no change of rollplane's is recorded.
      const deployments = sim.store.resourceType('apps', 'deployments')!;
      const args: string[] = sim.store.get(deployments, CONTROLLER.namespace, CONTROLLER.name)!.spec.template.spec.containers[0].args;
      expect(args[args.indexOf('--image') + 1]).toBe(HELM);
      // No write of any rollout's, this one's or the failed one's above (whose prepare was retried until it ended).
      expect(seen.filter((e) => e.type === EventType.UpstreamControllerChanged && e.payload.planned === true)).toEqual([]);
    } finally {
      release();
      sim.api.hooks = { ...sim.api.hooks, beforeRequest: before };
      unsubscribe();
    }
  });
});
