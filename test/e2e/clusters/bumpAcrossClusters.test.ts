import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType, type StoredEvent } from '../../../src/domain/events.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import { startCli } from '../../cli/cliHarness.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { collect as collectResults, gql, wsClient } from '../../helpers/graphql.js';
import { collectEvents, MEMBER_FLEET_ENV, memberPool as memberPoolOf, registerMembers } from '../../helpers/memberFleet.js';
import { until } from '../../helpers/until.js';

/**
 * `bumpAgentImage` across member clusters over HTTP (docs/adr/0058-bump-across-clusters.md): the real app on port 0
 * with `local` (the embedded simulator) and three simulated member clusters, each a simulator of its own reached over
 * HTTP through its front door and driven by its own runtime. A bump selects clusters by name and by label, plans each
 * from its own caches, groups its plan by cluster, and runs to SUCCEEDED in every cluster; bad selections are
 * BAD_USER_INPUT and leave no rollout; a member cut off mid-rollout fails its own targets at their deadline, naming it.
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
const MEMBERS = ['edge-1', 'edge-2', 'edge-3'];
/** Long enough for a healthy pool on a loaded machine (a healthy target past it fails the rollout: threshold 3). */
const DEADLINE_SECONDS = 10;

const BUMP = `mutation ($input: BumpAgentImageInput!) {
  bumpAgentImage(input: $input) {
    created dryRun rollout { id state kind }
    plan { cluster namespace name fromVersion toVersion action reason }
  }
}`;

interface PlanRow {
  cluster: string;
  namespace: string;
  name: string;
  fromVersion: string | null;
  toVersion: string;
  action: string;
}

describe('a bump across member clusters', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane bump across clusters '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: MEMBERS.map((name) => ({ name, fleet: 'pools=2,nodes=2' })) });
    registerMembers(dir, fleet, MEMBERS, (name) => ({ tier: 'edge', region: name === 'edge-3' ? 'us-east' : 'eu-west' }));
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=2,nodes=2' } });
    await until('every member driven by its own runtime', () =>
      MEMBERS.every((name) => app.memberRuntimes?.snapshot().some((r) => r.cluster === name && r.running && r.kinds.includes('AGENT_POOL'))),
    );
    await until('local pools in the caches', async () => (await app.domain.agentPools!.all()).length === 2);
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const memberPool = (cluster: string, name: string) => memberPoolOf(fleet, cluster, name);
  const rolloutCount = async () => (await gql(app.url, '{ rollouts(first: 1) { totalCount } }')).data.rollouts.totalCount as number;
  const bump = (input: Record<string, unknown>) => gql(app.url, BUMP, { input });
  const collect = (match: (e: StoredEvent) => boolean, done: (seen: StoredEvent[]) => boolean) => collectEvents(app, match, done);

  it('plans local and two members cluster by cluster, dry-runs grouped, and runs to SUCCEEDED in each', async () => {
    // Four at once over the rollout, one at once per cluster: each cluster's two pools go one after the other.
    const input = {
      image: NEW,
      memberClusters: { names: ['edge-2', 'local', 'edge-1'] },
      strategy: { maxUnavailable: '4', maxUnavailablePerMemberCluster: '1', autoRollback: false },
    };
    const dry = await bump({ ...input, dryRun: true });
    expect(dry.errors).toBeUndefined();
    expect(dry.data.bumpAgentImage).toMatchObject({ dryRun: true, created: false, rollout: { id: 'dry-run' } });
    const plan: PlanRow[] = dry.data.bumpAgentImage.plan;
    // Grouped: local first, then the members by name, each cluster's pools planned from its own caches.
    expect(plan.map((p) => `${p.cluster}/${p.namespace}/${p.name}:${p.action}`)).toEqual([
      'local/default/net-1:change',
      'local/default/net-2:change',
      'edge-1/default/net-1:change',
      'edge-1/default/net-2:change',
      'edge-2/default/net-1:change',
      'edge-2/default/net-2:change',
    ]);
    expect(plan.every((p) => p.fromVersion === OLD && p.toVersion === NEW)).toBe(true);
    expect(await rolloutCount()).toBe(0);

    // The CLI prints the same plan, one table per cluster.
    const cli = await startCli(['bump', 'agent-image', NEW, '--clusters', 'local,edge-1', '--clusters', 'edge-2', '--dry-run', '--url', app.url]).done;
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain('plan: 6 targets: 6 change in 3 member clusters');
    const headers = cli.stdout.split('\n').filter((line) => line.startsWith('cluster '));
    expect(headers).toEqual(['cluster local: 2 targets: 2 change', 'cluster edge-1: 2 targets: 2 change', 'cluster edge-2: 2 targets: 2 change']);

    const succeeded = collect(
      (e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED'].includes(String(e.payload.to)),
      (seen) => seen.length > 0,
    );
    // In flight per cluster and over the rollout, from the targets' state changes in the order they were committed.
    const inFlight = new Map<string, number>();
    let mostInOneCluster = 0;
    let mostOverall = 0;
    const stopCounting = app.bus.subscribe((event) => {
      if (event.type !== EventType.TargetStateChanged || !event.cluster) return;
      const delta = event.payload.to === 'PROGRESSING' ? 1 : event.payload.from === 'PROGRESSING' ? -1 : 0;
      inFlight.set(event.cluster, (inFlight.get(event.cluster) ?? 0) + delta);
      mostInOneCluster = Math.max(mostInOneCluster, ...inFlight.values());
      mostOverall = Math.max(
        mostOverall,
        [...inFlight.values()].reduce((a, b) => a + b, 0),
      );
    });
    const run = await bump(input);
    expect(run.errors).toBeUndefined();
    const id: string = run.data.bumpAgentImage.rollout.id;
    expect(run.data.bumpAgentImage.created).toBe(true);
    const [end] = await succeeded;
    stopCounting();
    expect(end!.payload.to).toBe('SUCCEEDED');
    // The first pass admits one pool in each of the three clusters (three of the four slots), never two in one.
    expect(mostInOneCluster).toBe(1);
    expect(mostOverall).toBe(3);
    const shown = await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { strategy { maxUnavailable maxUnavailablePerMemberCluster } } }', { id });
    expect(shown.data.rollout.strategy).toEqual({ maxUnavailable: '4', maxUnavailablePerMemberCluster: '1' });
    const bad = await bump({ ...input, strategy: { maxUnavailablePerMemberCluster: 'half' } });
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(bad.errors?.[0]?.message).toMatch(/maxUnavailablePerMemberCluster/);

    const res = await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state targets(first: 10) { edges { node { cluster name state } } } } }', { id });
    const targets = res.data.rollout.targets.edges.map(
      (e: { node: { cluster: string; name: string; state: string } }) => `${e.node.cluster}/${e.node.name}:${e.node.state}`,
    );
    expect(targets.sort()).toEqual(['edge-1/net-1', 'edge-1/net-2', 'edge-2/net-1', 'edge-2/net-2', 'local/net-1', 'local/net-2'].map((t) => `${t}:SUCCEEDED`));
    for (const cluster of ['edge-1', 'edge-2']) for (const name of ['net-1', 'net-2']) expect(memberPool(cluster, name)?.status.agentPodRef.image).toBe(NEW);
    expect(memberPool('edge-3', 'net-1')?.status.agentPodRef.image).toBe(OLD);
    const local = await app.domain.agentPools!.all();
    expect(local.map((p) => p.runningImage)).toEqual([NEW, NEW]);

    // The history by cluster: the recreations of each cluster, read by the events query and followed by a subscription
    // of a list of clusters (replayed from the start, so nothing races the rollout).
    const recreatedIn = async (cluster: string): Promise<string[]> =>
      (
        await gql(
          app.url,
          'query ($id: ID!, $c: String) { events(filter: { types: [AgentRecreated], rolloutId: $id, cluster: $c }, first: 50) { edges { node { id } } } }',
          { id, c: cluster },
        )
      ).data.events.edges.map((e: { node: { id: string } }) => e.node.id);
    const [inLocal, inEdge1, inEdge2] = [await recreatedIn('local'), await recreatedIn('edge-1'), await recreatedIn('edge-2')];
    expect([inLocal.length, inEdge1.length, inEdge2.length]).toEqual([2, 2, 2]);
    const client = wsClient(app.url);
    try {
      const followed = collectResults<{ agentRecreated: { eventId: string; cluster: string; poolName: string } }>(
        client,
        'subscription ($id: ID!) { agentRecreated(filter: { rolloutId: $id, clusters: ["local", "edge-2"] }, after: "0") { eventId cluster poolName } }',
        { id },
      );
      await followed.waitFor(4);
      expect(followed.errors).toEqual([]);
      expect(followed.results.map((r) => r.agentRecreated.eventId).sort()).toEqual([...inLocal, ...inEdge2].sort());
      // Each recreation says its cluster: the same pool names are in both (attack 15, F3).
      expect(followed.results.map((r) => `${r.agentRecreated.cluster}/${r.agentRecreated.poolName}`).sort()).toEqual([
        'edge-2/net-1',
        'edge-2/net-2',
        'local/net-1',
        'local/net-2',
      ]);
      followed.unsubscribe();
    } finally {
      await client.dispose();
    }

    // The kinds' lists answer from one cluster's caches.
    const lists = await gql(
      app.url,
      '{ edge3: agentPools(cluster: "edge-3") { edges { node { name runningImage } } } edge1: agentPools(cluster: "edge-1") { totalCount } }',
    );
    expect(lists.errors).toBeUndefined();
    expect(lists.data.edge3.edges.map((e: { node: { runningImage: string } }) => e.node.runningImage)).toEqual([OLD, OLD]);
    // What each pool should run is its own cluster's decision: edge-3's pools, which no rollout touched, do not desire
    // the image the same-named pools of the other clusters were moved to, and show no drift (attack 16, G3).
    const edge3 = await gql(app.url, '{ agentPools(cluster: "edge-3") { edges { node { desiredImage desiredBy } } } drift(cluster: "edge-3") { totalCount } }');
    expect(edge3.data.agentPools.edges.map((e: { node: unknown }) => e.node)).toEqual([
      { desiredImage: OLD, desiredBy: null },
      { desiredImage: OLD, desiredBy: null },
    ]);
    expect(edge3.data.drift.totalCount).toBe(0);

    // The same request under the same key is the same rollout; the clusters are part of the request.
    const keyed = { ...input, idempotencyKey: 'across-1', image: NEW };
    const again = await bump(keyed);
    expect(again.errors).toBeUndefined();
    const retry = await bump(keyed);
    expect(retry.data.bumpAgentImage).toMatchObject({ created: false, rollout: { id: again.data.bumpAgentImage.rollout.id } });
    const other = await bump({ ...keyed, memberClusters: { names: ['edge-1'] } });
    expect(other.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  });

  it('refuses bad cluster selections with BAD_USER_INPUT and starts nothing', async () => {
    const before = await rolloutCount();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ names: ['edge-9'] }, /no member cluster named "edge-9" is registered/],
      [{ labelSelector: 'tier=core' }, /selects no member cluster/],
      [{ labelSelector: 'tier in (edge' }, /is not a label selector/],
      [{ names: ['Edge_1'] }, /is not a cluster name/],
    ];
    for (const [memberClusters, message] of cases) {
      const res = await bump({ image: NEWER, memberClusters });
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(memberClusters)).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toMatch(message);
    }
    // A cluster list of a kind the cluster does not serve, and a list of an unknown cluster, are refused the same way.
    const list = await gql(app.url, '{ agentPools(cluster: "edge-9") { totalCount } }');
    expect(list.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(await rolloutCount()).toBe(before);
  });

  it('finishes the reachable clusters when one is cut off mid-rollout; its targets fail at their deadline naming it', async () => {
    // Selected by label: edge-1, edge-2, edge-3, planned in that order; edge-3's pools are admitted last.
    const input = {
      image: NEWER,
      memberClusters: { labelSelector: 'tier=edge' },
      strategy: { maxUnavailable: '2', progressDeadlineSeconds: DEADLINE_SECONDS, failureThreshold: 3, autoRollback: false },
    };
    const dry = await bump({ ...input, dryRun: true });
    expect([...new Set((dry.data.bumpAgentImage.plan as PlanRow[]).map((p) => p.cluster))]).toEqual(MEMBERS);

    // Mid-rollout: edge-3 goes away as soon as the first target is admitted, before any of its own is.
    let cut: Promise<unknown> | undefined;
    const unsubscribe = app.bus.subscribe((event) => {
      if (!cut && event.type === EventType.TargetStateChanged && event.payload.to === 'PROGRESSING') cut = fleet.set('edge-3', 'blackhole');
    });
    const failed = collect(
      (e) => e.type === EventType.TargetFailed && e.cluster === 'edge-3',
      (seen) => seen.length === 2,
    );
    const ended = collect(
      (e) => e.type === EventType.RolloutStateChanged && ['SUCCEEDED', 'FAILED'].includes(String(e.payload.to)),
      (seen) => seen.length > 0,
    );
    const run = await bump(input);
    expect(run.errors).toBeUndefined();
    const id: string = run.data.bumpAgentImage.rollout.id;
    await until('edge-3 cut off', () => cut);
    await cut;
    unsubscribe();

    // Waited on the outcome events, not on a clock: edge-3's two targets fail, then the rollout ends.
    const failures = await failed;
    for (const event of failures) expect(String(event.payload.error)).toMatch(/member cluster edge-3 is UNREACHABLE/);
    const [end] = await ended;
    expect(end!.payload).toMatchObject({ to: 'SUCCEEDED' });

    const res = await gql(
      app.url,
      `query ($id: ID!) { rollout(id: $id) { state message targets(first: 10) { edges { node { cluster name state error } } }
        events(first: 100) { edges { node { type cluster } } } } }`,
      { id },
    );
    const rollout = res.data.rollout;
    expect(rollout.message).toMatch(/target\(s\) failed, below the failure threshold/);
    const nodes: { cluster: string; name: string; state: string; error: string | null }[] = rollout.targets.edges.map((e: { node: unknown }) => e.node);
    // Nothing lost: every target of every cluster is there, with its outcome.
    expect(nodes.map((t) => `${t.cluster}/${t.name}`).sort()).toEqual(MEMBERS.flatMap((c) => [`${c}/net-1`, `${c}/net-2`]));
    for (const t of nodes) {
      if (t.cluster === 'edge-3') {
        expect(t.state).toBe('FAILED');
        expect(t.error).toContain(`not converged within the progress deadline of ${DEADLINE_SECONDS}s`);
        expect(t.error).toContain('member cluster edge-3 is UNREACHABLE');
        expect(memberPool('edge-3', t.name)?.status.agentPodRef.image).toBe(OLD);
      } else {
        expect(t.state).toBe('SUCCEEDED');
        expect(memberPool(t.cluster, t.name)?.status.agentPodRef.image).toBe(NEWER);
      }
    }
    // The history shows it: the failures recorded against edge-3.
    const events: { type: string; cluster: string | null }[] = rollout.events.edges.map((e: { node: unknown }) => e.node);
    expect(events.filter((e) => e.type === 'TargetFailed').map((e) => e.cluster)).toEqual(['edge-3', 'edge-3']);

    // The rollouts list by cluster: only this rollout has targets in edge-3.
    const listed = await gql(
      app.url,
      '{ edge3: rollouts(filter: { clusters: ["edge-3"] }) { edges { node { id } } } local: rollouts(filter: { clusters: ["local"] }) { edges { node { id } } } }',
    );
    expect(listed.data.edge3.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([id]);
    expect(listed.data.local.edges.map((e: { node: { id: string } }) => e.node.id)).not.toContain(id);
    const history = await startCli(['history', '--cluster', 'edge-3', '-o', 'json', '--url', app.url]).done;
    expect(history.code).toBe(0);
    expect(JSON.parse(history.stdout).rollouts.map((r: { id: string }) => r.id)).toEqual([id]);

    // While edge-3 is away, a bump that selects it is UNAVAILABLE naming it, and starts nothing.
    // (Its caches may be kept a while in case it answers again, ROLLPLANE_MEMBER_CLUSTER_CACHE_GRACE_MS; nothing drives
    // or reads it meanwhile.)
    await until(
      'edge-3 not driven',
      () =>
        app.memberRuntimes!.driverOf('edge-3', 'AGENT_POOL') === undefined && !app.memberRuntimes!.snapshot().some((r) => r.cluster === 'edge-3' && r.leading),
    );
    const before = await rolloutCount();
    const refused = await bump({ image: NEW, memberClusters: { names: ['edge-1', 'edge-3'] }, allowDowngrade: true });
    expect(refused.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
    expect(refused.errors?.[0]?.message).toMatch(/member cluster edge-3 is UNREACHABLE/);
    expect(await rolloutCount()).toBe(before);

    // Drift by member (attack 15, F6): edge-3's cannot be read now (UNAVAILABLE, not an empty "no drift"); edge-1's
    // is read from its caches: its pools run what the rollout decided.
    const drift = await gql(app.url, '{ edge3: drift(cluster: "edge-3") { totalCount } }');
    expect(drift.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
    expect(drift.errors?.[0]?.message).toMatch(/edge-3/);
    const cliDrift = await startCli(['drift', '--cluster', 'edge-1', '-o', 'json', '--url', app.url]).done;
    expect(cliDrift.code).toBe(0);
    expect(JSON.parse(cliDrift.stdout)).toEqual({ totalCount: 0, items: [] });
    const unknown = await startCli(['drift', '--cluster', 'nope', '--url', app.url]).done;
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/no member cluster named "nope" is registered/);
  });
});
