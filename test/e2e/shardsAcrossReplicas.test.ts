import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { planAcrossClusters } from '../../src/domain/clusterSelection.js';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import { EventType } from '../../src/domain/events.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import { RolloutLauncher } from '../../src/domain/RolloutLauncher.js';
import { RolloutService } from '../../src/domain/RolloutService.js';
import type { AgentPoolStrategy } from '../../src/kinds/agentPool/contract.js';
import { agentName } from '../../src/kinds/agentPool/controller/names.js';
import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { openDatabase, type Database } from '../../src/store/db.js';
import { type ServiceProcess, startService } from '../helpers/child.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';
import { isLeader, START_TIMEOUT_MS } from './replicas.js';
import {
  audit,
  auditMark,
  checkOneWriterPerCluster,
  type Fleet,
  heldShards,
  pools,
  killReplicas,
  registerMembers,
  replicaEnv,
  seesMembers,
  startFleet,
  stopFleet,
} from './shards/fleet.js';

/**
 * Issue 29, "several replicas share the clusters" (docs/adr/0059-shard-leases.md): two replicas on one PostgreSQL, 20
 * simulated member clusters (a fleet in its own process, registered through labelled Secrets in the management
 * cluster), one rollout over all of them. Each cluster is driven by exactly one replica at every moment — checked from
 * the simulators' audit: every write to a member is made by the replica that held the member's shard Lease at that
 * point (the management cluster's Lease writes and the members' writes are numbered in one sequence) — through a
 * SIGKILL of one replica and a SIGSTOP/SIGCONT of the other, and every pool is recreated exactly once.
 */
const POOLS = 2;
const SHARDS = 4;
const IMAGES = ['rancher/harvester-vm-dhcp-agent:v0.3.1', 'rancher/harvester-vm-dhcp-agent:v0.3.2'];

/** The rollout once it has ended. */
function ended(rollouts: RolloutService, id: string) {
  return until(
    'the rollout to end',
    async () => {
      const rollout = await rollouts.get(id);
      return rollout && ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'].includes(rollout.state) ? rollout : undefined;
    },
    240_000,
  );
}

describeWithPostgres('member clusters shared by two replicas through shard Leases', (server) => {
  let fleet: Fleet;
  const services: ServiceProcess[] = [];
  const databases: Database[] = [];

  beforeAll(async () => {
    fleet = await startFleet(20, `pools=${POOLS},nodes=1,peers=0`);
    await registerMembers(fleet);
  }, 120_000);
  afterEach(async () => {
    await killReplicas(services);
    for (const db of databases.splice(0)) await db.close();
  });
  afterAll(() => stopFleet(fleet));

  /** Two replicas on a fresh database, both seeing every member and both holding shards; and a launcher on the database. */
  async function startReplicas() {
    const url = await server().createDatabase();
    const env = replicaEnv(fleet, SHARDS, url);
    const a = await startService(env, START_TIMEOUT_MS);
    services.push(a);
    await until('A to lead', () => isLeader(a), 60_000);
    const b = await startService(env, START_TIMEOUT_MS);
    services.push(b);
    await until('both replicas to see every member', async () => (await seesMembers(a, fleet.members)) && (await seesMembers(b, fleet.members)), 120_000);
    // Spread: both hold shards, together all of them.
    let seen = '';
    await until(
      () => `the shards to be spread over both replicas (held: ${seen})`,
      async () => {
        const [onA, onB] = [await heldShards(a), await heldShards(b)];
        const leases = await fleet.kube.get('mgmt')!.coordination.listNamespacedLease({ namespace: 'rollplane-system' });
        seen = `A ${onA.join(',')}; B ${onB.join(',')}; ${leases.items.map((l) => `${l.metadata?.name}=${l.spec?.holderIdentity}@${l.spec?.renewTime?.toISOString?.() ?? l.spec?.renewTime}`).join(' ')}`;
        return onA.length > 0 && onB.length > 0 && onA.length + onB.length === SHARDS;
      },
      60_000,
    );
    const db = await openDatabase(url);
    databases.push(db);
    const events = new EventLog(db.store, new InProcessEventBus(), { publishFromStore: true });
    const rollouts = new RolloutService(db.store, events, KIND_CONTRACTS);
    return { a, b, events, rollouts, launcher: new RolloutLauncher(rollouts) };
  }

  /**
   * One rollout over every member's pools to `image`, launched through the domain: the API's bump across clusters is
   * another branch's (ADR 0058); this plans as it will, each cluster's pools from that cluster.
   */
  async function launch(launcher: RolloutLauncher, image: string): Promise<string> {
    const strategy = { ...defaultStrategy(KIND_CONTRACTS.AGENT_POOL), maxUnavailable: '4', progressDeadlineSeconds: 300, autoRollback: false };
    const plan = await planAcrossClusters<AgentPoolStrategy>(fleet.members, async (cluster) => {
      const found = (await pools(fleet, cluster)).sort((x, y) => x.metadata!.name!.localeCompare(y.metadata!.name!));
      return {
        kind: 'AGENT_POOL',
        fromVersion: found[0]!.status!.agentPodRef!.image!,
        toVersion: image,
        selector: {},
        strategy,
        targets: found.map((p) => ({
          namespace: p.metadata!.namespace!,
          name: p.metadata!.name!,
          fromVersion: p.status!.agentPodRef!.image!,
          toVersion: image,
        })),
      };
    });
    const launched = await launcher.launch({ plan, cause: { actor: 'test' }, dryRun: false, supersede: false, request: {} });
    return launched.rollout.id;
  }

  it('SIGKILL of the replica that does not lead: its shards move, each pool is recreated exactly once, the rollout succeeds', async () => {
    const { a, b, events, rollouts, launcher } = await startReplicas();
    const from = await auditMark(fleet);
    const id = await launch(launcher, IMAGES[0]!);
    const recreated = async () => (await rollouts.allTargets(id)).filter((t) => t.state === 'SUCCEEDED').length;
    await until('the rollout to be under way', async () => (await recreated()) >= 4, 120_000);
    const [leader, other] = (await isLeader(a)) ? [a, b] : [b, a];
    const lost = await heldShards(other);
    expect(lost.length).toBeGreaterThan(0);
    other.child.kill('SIGKILL');
    await other.exited;
    await until('the survivor to hold every shard', async () => (await heldShards(leader)).length === SHARDS, 60_000);

    expect((await ended(rollouts, id)).state).toBe('SUCCEEDED');
    await expectEachPoolOnceAt(IMAGES[0]!, id, from, rollouts, events);
    const writers = await checkOneWriterPerCluster(fleet, SHARDS, from);
    // Both replicas wrote to members: the work was shared, and moved.
    expect(new Set([...writers.values()].flatMap((w) => [...w])).size).toBe(2);
  }, 600_000);

  it('SIGSTOP of the leader: the other takes its shards; resumed, it writes to no member it no longer holds; the rollout succeeds', async () => {
    const { a, b, events, rollouts, launcher } = await startReplicas();
    const from = await auditMark(fleet);
    const id = await launch(launcher, IMAGES[1]!);
    const succeeded = async () => (await rollouts.allTargets(id)).filter((t) => t.state === 'SUCCEEDED').length;
    await until('the rollout to be under way', async () => (await succeeded()) >= 4, 120_000);
    const [stopped, other] = (await isLeader(a)) ? [a, b] : [b, a];
    stopped.child.kill('SIGSTOP');
    await until('the other replica to lead and hold every shard', async () => (await isLeader(other)) && (await heldShards(other)).length === SHARDS, 60_000);
    stopped.child.kill('SIGCONT');
    await until('the resumed replica to answer and say it holds no shard it lost', async () => {
      try {
        const held = await heldShards(stopped);
        const mine = await heldShards(other);
        return held.every((n) => !mine.includes(n));
      } catch {
        return false;
      }
    });
    expect((await ended(rollouts, id)).state).toBe('SUCCEEDED');
    await expectEachPoolOnceAt(IMAGES[1]!, id, from, rollouts, events);
    // Its writes after SIGCONT included: none to a member whose shard it did not hold at that point.
    await checkOneWriterPerCluster(fleet, SHARDS, from);
  }, 600_000);

  /** Every pool of every member at `image`, its agent created exactly once since `from`, and one AgentRecreated each. */
  async function expectEachPoolOnceAt(image: string, id: string, from: number, rollouts: RolloutService, events: EventLog): Promise<void> {
    for (const cluster of fleet.members) {
      const found = await pools(fleet, cluster);
      expect(found.length, cluster).toBe(POOLS);
      const creates = (await audit(fleet, cluster, from)).filter((r) => r.verb === 'create' && r.resource === 'pods');
      for (const pool of found) {
        expect(pool.status?.agentPodRef?.image, `${cluster}/${pool.metadata?.name}`).toBe(image);
        const agent = agentName(pool.metadata!.namespace!, pool.metadata!.name!);
        expect(
          creates.filter((r) => r.name === agent).length,
          `${cluster}/${agent} created; writes: ${JSON.stringify((await audit(fleet, cluster, from)).map((r) => [r.verb, r.resource, r.namespace, r.name]))}`,
        ).toBe(1);
      }
    }
    const targets = await rollouts.allTargets(id);
    expect(targets.length).toBe(fleet.members.length * POOLS);
    expect(targets.every((t) => t.state === 'SUCCEEDED')).toBe(true);
    // The history: one AgentRecreated per pool, in its cluster.
    const recreated = await events.listBefore({ rolloutId: id, types: [EventType.AgentRecreated] }, undefined, 500);
    expect(recreated.map((e) => `${e.cluster}/${e.name}`).sort()).toEqual(targets.map((t) => `${t.cluster}/${t.name}`).sort());
  }
});
