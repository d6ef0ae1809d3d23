import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../src/domain/events.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { selectClusters } from '../../src/domain/clusterSelection.js';
import { planByCluster } from '../../src/domain/RolloutLauncher.js';
import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { MEMBER_FLEET_ENV, memberPool, planMemberPools, registerMembers, untilRolloutEnded } from '../helpers/memberFleet.js';
import { scrape } from '../helpers/promText.js';
import { until } from '../helpers/until.js';

/**
 * One rollout over three simulated member clusters, each driven by its own runtime over HTTP (docs/adr/0055): edge-2
 * is made unreachable mid-rollout. edge-1's and edge-3's pools finish; edge-2's targets wait and fail at their progress
 * deadline with a reason that names the cluster; the history records every target with its cluster.
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const MEMBERS = ['edge-1', 'edge-2', 'edge-3'];
const DEADLINE_SECONDS = 4;

describe('a rollout across member clusters', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane rollout across clusters '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    // `edge-api` is registered by a test through the API (a cluster is registered under one name only).
    fleet = await startSimulatedClusters({ clusters: [...MEMBERS, 'edge-api'].map((name) => ({ name, fleet: 'pools=2,nodes=2' })) });
    registerMembers(dir, fleet, MEMBERS, () => ({ tier: 'edge' }));
    // A short cache grace: the unreachable member's runtime stops a second after it stopped answering (its caches are
    // kept that long in case it answers again; test/clusters/memberCacheGrace.test.ts).
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_MEMBER_CLUSTER_CACHE_GRACE_MS: '1000' } });
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const pool = (cluster: string, name: string) => memberPool(fleet, cluster, name);

  it('finishes the reachable clusters and fails the unreachable one at its deadline, naming it', async () => {
    await until('every member driven by its own runtime', () =>
      MEMBERS.every((name) => app.memberRuntimes?.snapshot().some((r) => r.cluster === name && r.running && r.kinds.includes('AGENT_POOL'))),
    );
    // Planned as a bump across clusters will be: the clusters by label, each cluster's pools from its own caches.
    const clusters = selectClusters({ labelSelector: 'tier=edge' }, await app.memberClusters.registry.list());
    expect(clusters).toEqual(MEMBERS);
    const strategy = {
      ...defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      maxUnavailable: '2',
      progressDeadlineSeconds: DEADLINE_SECONDS,
      failureThreshold: 3,
      autoRollback: false,
    };
    // edge-2 planned last: its targets are admitted only after two of the others have finished.
    const plan = await planMemberPools(app, ['edge-1', 'edge-3', 'edge-2'], strategy, OLD, NEW);
    // Mid-rollout: edge-2 goes away as soon as the first target is admitted, before any of its own is.
    let cut: Promise<unknown> | undefined;
    const unsubscribe = app.bus.subscribe((event) => {
      if (!cut && event.type === EventType.TargetStateChanged && event.payload.to === 'PROGRESSING') cut = fleet.set('edge-2', 'blackhole');
    });
    const launched = await app.domain.launcher.launch({ plan, cause: { actor: 'test' }, dryRun: false, supersede: false, request: {} });
    expect(planByCluster(launched.plan).map((g) => [g.cluster, g.items.map((i) => i.name)])).toEqual([
      ['edge-1', ['net-1', 'net-2']],
      ['edge-2', ['net-1', 'net-2']],
      ['edge-3', ['net-1', 'net-2']],
    ]);
    const id = launched.rollout.id;
    expect(await app.domain.rollouts.activeRolloutIdsInCluster('edge-2')).toEqual([id]);
    expect(await app.domain.rollouts.activeRolloutIdsInCluster('local')).toEqual([]);
    const targets = () => app.domain.rollouts.allTargets(id);
    await until('edge-2 cut off', () => cut);
    await cut;
    unsubscribe();

    const done = await untilRolloutEnded(app, id);
    const byCluster = (await targets()).map((t) => [t.cluster, t.name, t.state]);
    // The reachable clusters finished, whatever became of edge-2.
    for (const cluster of ['edge-1', 'edge-3']) {
      for (const name of ['net-1', 'net-2']) {
        expect(byCluster).toContainEqual([cluster, name, 'SUCCEEDED']);
        expect(pool(cluster, name)?.status.agentPodRef.image).toBe(NEW);
      }
    }
    // edge-2's targets were admitted after it went away: they waited, then failed at their deadline naming the cluster.
    for (const target of (await targets()).filter((t) => t.cluster === 'edge-2')) {
      expect(target.state).toBe('FAILED');
      expect(target.error).toContain(`not converged within the progress deadline of ${DEADLINE_SECONDS}s`);
      expect(target.error).toContain('member cluster edge-2 is UNREACHABLE');
      expect(pool('edge-2', target.name)?.status.agentPodRef.image).toBe(OLD);
    }
    expect(done.state).toBe('SUCCEEDED');
    expect(done.message).toMatch(/target\(s\) failed, below the failure threshold/);

    // The history: each target's events carry its cluster; edge-2's failure is recorded against edge-2.
    const failed = await app.domain.events.listBefore({ rolloutId: id, types: [EventType.TargetFailed] }, undefined, 50);
    expect(failed.map((e) => [e.cluster, e.name]).sort()).toEqual([
      ['edge-2', 'net-1'],
      ['edge-2', 'net-2'],
    ]);
    const changes = await app.domain.events.listBefore({ rolloutId: id, types: [EventType.TargetStateChanged] }, undefined, 100);
    expect(new Set(changes.map((e) => e.cluster))).toEqual(new Set(MEMBERS));
    const recreated = await app.domain.events.listBefore({ kind: 'AGENT_POOL', cluster: 'edge-3' }, undefined, 100);
    expect(
      recreated
        .filter((e) => e.type === EventType.AgentRecreated)
        .map((e) => e.name)
        .sort(),
    ).toEqual(['net-1', 'net-2']);
    // Revisions are numbered per cluster: the same pool name in two clusters has its own.
    expect((await app.domain.rollouts.revisions('AGENT_POOL', 'default', 'net-1', 10, undefined, 'edge-3')).items.map((r) => r.version)).toEqual([NEW, OLD]);
    expect((await app.domain.rollouts.revisions('AGENT_POOL', 'default', 'net-1', 10, undefined, 'edge-2')).items).toEqual([]);

    // Over HTTP: the rollout's targets and events with their clusters, edge-2's errors naming it.
    const res = await gql(
      app.url,
      `query ($id: ID!) { rollout(id: $id) { targets(first: 10) { edges { node { cluster name state error } } }
        events(first: 100) { edges { node { type cluster object { name } } } } } }`,
      { id },
    );
    const nodes: { cluster: string; name: string; state: string; error: string | null }[] = res.data.rollout.targets.edges.map(
      (e: { node: unknown }) => e.node,
    );
    expect(nodes.map((t) => `${t.cluster}/${t.name}`).sort()).toEqual(MEMBERS.flatMap((c) => [`${c}/net-1`, `${c}/net-2`]));
    expect(nodes.filter((t) => t.cluster === 'edge-2').every((t) => t.state === 'FAILED' && t.error?.includes('member cluster edge-2'))).toBe(true);
    const events: { type: string; cluster: string | null }[] = res.data.rollout.events.edges.map((e: { node: unknown }) => e.node);
    expect(events.filter((e) => e.type === 'TargetFailed').map((e) => e.cluster)).toEqual(['edge-2', 'edge-2']);
    expect(events.filter((e) => e.type === 'RolloutStateChanged').every((e) => e.cluster === null)).toBe(true);

    // The deregistration question the clusters API asks: no active rollout left in edge-2.
    expect(await app.domain.rollouts.activeRolloutIdsInCluster('edge-2')).toEqual([]);
  });

  it('stops a member runtime cleanly when its cluster goes away, when it is deregistered and when leadership ends', async () => {
    const runtimes = app.memberRuntimes!;
    const has = (cluster: string) => runtimes.snapshot().some((r) => r.cluster === cluster && r.running);
    await until('edge-2 runtime stopped while it is unreachable', () => !runtimes.snapshot().some((r) => r.cluster === 'edge-2'));
    await fleet.set('edge-2', 'ready');
    await until('edge-2 driven again', () => has('edge-2'));

    // Without shards, leader-only: when this replica stops leading, every member's controllers stop (and it waits for
    // them) while its caches keep serving reads (docs/adr/0059); they run again when it leads.
    await runtimes.stopLeading();
    expect(runtimes.snapshot().map((r) => [r.cluster, r.running, r.leading])).toEqual(MEMBERS.map((name) => [name, true, false]));
    expect(runtimes.writerOf('edge-1')).toBeUndefined();
    expect(runtimes.driverOf('edge-1', 'AGENT_POOL')).toBeDefined();
    runtimes.startLeading();
    await until('every member driven again', () => MEMBERS.every((name) => runtimes.snapshot().some((r) => r.cluster === name && r.leading)));
    expect(runtimes.writerOf('edge-1')).toBeDefined();

    // Each member's runtime metrics are on /metrics with its cluster; local's series are as they were, unlabelled.
    const queueDepth = async () =>
      (await scrape(`${app.baseUrl}/metrics`)).filter((s) => s.name === 'workqueue_depth').map((s) => `${s.labels.cluster ?? ''}/${s.labels.name}`);
    for (const cluster of ['', ...MEMBERS]) expect(await queueDepth()).toContain(`${cluster}/agentpool`);

    // Deregistered (gone from the credentials file): its runtime stops; a target of it would wait, naming why.
    registerMembers(
      dir,
      fleet,
      MEMBERS.filter((name) => name !== 'edge-3'),
      () => ({ tier: 'edge' }),
    );
    await until('edge-3 runtime stopped', () => !runtimes.snapshot().some((r) => r.cluster === 'edge-3'));
    expect(runtimes.driverOf('edge-3', 'AGENT_POOL')).toBeUndefined();
    // Its series left /metrics with its runtime (and its health series with its registration): none names it.
    expect((await scrape(`${app.baseUrl}/metrics`)).filter((s) => s.labels.cluster === 'edge-3')).toEqual([]);
    expect(await queueDepth()).toContain('edge-1/agentpool');
    expect(runtimes.whyNotDriven('edge-3', 'AGENT_POOL')).toContain('member cluster edge-3 is not registered');
    expect(has('edge-1')).toBe(true);
  });

  it('refuses to deregister a cluster an active rollout has targets in (CONFLICT naming it), and lets it go once it ended', async () => {
    const admin = app.memberClusters.admin;
    await admin.register({ name: 'edge-api', kubeconfig: fleet.clusters.get('edge-api')!.kubeconfig, labels: {}, verify: false });
    const { rollout } = await app.domain.rollouts.create({
      kind: 'AGENT_POOL',
      fromVersion: OLD,
      toVersion: NEW,
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
      cause: { actor: 'test' },
      targets: [{ cluster: 'edge-api', namespace: 'default', name: 'net-9', fromVersion: OLD, toVersion: NEW }],
    });
    await expect(admin.deregister('edge-api')).rejects.toMatchObject({ code: 'CONFLICT', details: { rolloutIds: [rollout.id] } });
    await app.domain.rollouts.transition(rollout.id, 'ABORTED', 'test');
    await expect(admin.deregister('edge-api')).resolves.toMatchObject({ name: 'edge-api' });
  });
});
