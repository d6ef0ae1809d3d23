import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import type { Domain } from '../../src/domain/Domain.js';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import type { AgentPoolStrategy } from '../../src/kinds/agentPool/contract.js';
import { bumpClusterVersionInput } from '../../src/kinds/virtualCluster/contract.js';
import { RolloutLauncher, type LaunchRequest, type LaunchResult } from '../../src/domain/RolloutLauncher.js';
import { RolloutEngine } from '../../src/domain/RolloutEngine.js';
import { RolloutService } from '../../src/domain/RolloutService.js';
import { bumpClusterVersion, type ClusterVersionView, type VirtualClusterQueries, type VirtualClusterView } from '../../src/kinds/virtualCluster/plan.js';
import type { PgHistoryStore } from '../../src/store/postgres/PgHistoryStore.js';
import { openPgHistoryStore } from '../../src/store/postgres/open.js';
import { describeWithPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

/**
 * Launch decisions across replicas (issue 15): two "replicas" — a RolloutService and launcher each, on pools of their
 * own — on one PostgreSQL, launching at once. The overlap rule, supersede and the ClusterVersion rule are decided under
 * the kind's launch lock in the creating transaction; without it several launches pass the check together.
 */
const RACERS = 12;
const ROUNDS = 4;

interface Replica {
  store: PgHistoryStore;
  rollouts: RolloutService;
  launcher: RolloutLauncher;
  engine: RolloutEngine;
}

const strategy: AgentPoolStrategy = {
  kind: 'AGENT_POOL',
  maxUnavailable: '1',
  progressDeadlineSeconds: 600,
  failureThreshold: 1,
  autoRollback: false,
};

function bump(pools: string[], version: string, extra: Partial<LaunchRequest> = {}): LaunchRequest {
  return {
    plan: {
      kind: 'AGENT_POOL',
      fromVersion: 'agent:v1',
      toVersion: version,
      selector: {},
      strategy,
      targets: pools.map((name) => ({ namespace: 'default', name, fromVersion: 'agent:v1', toVersion: version })),
    },
    cause: { actor: 'race' },
    request: { pools, version },
    ...extra,
  };
}

/** The outcome of each launch: its rollout's id, or the error code it was refused with. */
async function settle(launches: Promise<LaunchResult>[]): Promise<{ created: LaunchResult[]; refused: AppError[] }> {
  const settled = await Promise.allSettled(launches);
  const created: LaunchResult[] = [];
  const refused: AppError[] = [];
  for (const s of settled) {
    if (s.status === 'fulfilled') created.push(s.value);
    else if (s.reason instanceof AppError) refused.push(s.reason);
    else throw s.reason;
  }
  return { created, refused };
}

describeWithPostgres('launches racing on two replicas of one PostgreSQL', (server) => {
  const replicas: Replica[] = [];
  beforeAll(async () => {
    const url = await server().createDatabase();
    for (let i = 0; i < 2; i++) {
      const { store } = await openPgHistoryStore(url, { poolSize: 6 });
      const rollouts = new RolloutService(store, new EventLog(store, new InProcessEventBus(), { publishFromStore: true }), KIND_CONTRACTS);
      const launcher = new RolloutLauncher(rollouts);
      // Only for `rollback` (a launch with supersede); nothing is enqueued or run.
      const engine = new RolloutEngine(rollouts, { info: () => {}, warn: () => {} });
      engine.connect(() => {}, launcher);
      replicas.push({ store, rollouts, launcher, engine });
    }
  });
  afterAll(async () => {
    for (const r of replicas) await r.store.close();
  });
  const on = (i: number) => replicas[i % replicas.length]!;

  it('creates one rollout of concurrent launches covering the same targets without a key; the others are CONFLICT', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const pools = [`same-${round}-a`, `same-${round}-b`];
      // Each launch changes the same pools (with another version, so none is a retry of another).
      const { created, refused } = await settle(Array.from({ length: RACERS }, (_, i) => on(i).launcher.launch(bump(pools, `agent:v2-${i}`))));
      expect(created).toHaveLength(1);
      expect(refused).toHaveLength(RACERS - 1);
      const winner = created[0]!.rollout.id;
      for (const error of refused) {
        expect(error.code).toBe('CONFLICT');
        expect(error.message).toMatch(
          new RegExp(
            `^active rollout ${winner} already covers default/same-${round}-[ab] \\(and 1 more targets\\); wait for it, abort it, or pass supersede: true$`,
          ),
        );
        expect(error.details).toEqual({ rolloutIds: [winner] });
      }
      const active = await on(round).rollouts.list({ kind: 'AGENT_POOL', states: ['PENDING', 'PROGRESSING', 'PAUSED'], targetName: pools[0]! }, 50, undefined);
      expect(active.items.map((r) => r.id)).toEqual([winner]);
    }
  });

  it('ends concurrent supersedes with one active rollout, every other one ABORTED as superseded', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const pools = [`sup-${round}-a`, `sup-${round}-b`];
      const first = await on(0).launcher.launch(bump(pools, 'agent:v2'));
      const { created, refused } = await settle(
        Array.from({ length: RACERS }, (_, i) => on(i).launcher.launch(bump(pools, `agent:v3-${i}`, { supersede: true }))),
      );
      expect(refused).toEqual([]);
      expect(created).toHaveLength(RACERS);
      const states = await Promise.all(
        [first, ...created].map(async (c) => (await on(round).rollouts.require(c.rollout.id)) as { state: string; message: string | null }),
      );
      const active = states.filter((s) => s.state === 'PENDING');
      expect(active).toHaveLength(1);
      const others = states.filter((s) => s.state !== 'PENDING');
      expect(others).toHaveLength(RACERS);
      for (const other of others) expect(other).toMatchObject({ state: 'ABORTED', message: 'superseded by a newer rollout' });
      // No target of an aborted rollout is left to change: only the active one covers the pools.
      const covered = await on(1).rollouts.coveredTargets('AGENT_POOL', ['PENDING', 'PROGRESSING', 'PAUSED']);
      expect(new Set(covered.filter((c) => pools.includes(c.name)).map((c) => c.rolloutId)).size).toBe(1);
    }
  });

  // A rollback takes over only its original; a second rollback of it is a newer rollout of the same targets, CONFLICT
  // (attack finding F8: rollbacks superseded each other, and any newer rollout, without asking).
  it('makes one rollback of concurrent rollbacks of one rollout; the others are CONFLICT', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const pools = [`back-${round}-a`, `back-${round}-b`];
      const original = (await on(0).launcher.launch(bump(pools, 'agent:v2'))).rollout;
      await on(0).rollouts.setTargetStates(
        original.id,
        pools.map((name) => ({ target: { namespace: 'default', name }, to: 'PROGRESSING' as const })),
      );
      // Ended already (its admitted targets still to revert), so every rollback goes straight to its launch.
      await on(0).rollouts.abort(original.id);
      const { created, refused } = await settle(Array.from({ length: RACERS }, (_, i) => on(i).engine.rollback(original.id)));
      expect(created).toHaveLength(1);
      expect(refused).toHaveLength(RACERS - 1);
      const winner = created[0]!.rollout.id;
      for (const error of refused) {
        expect(error.code).toBe('CONFLICT');
        expect(error.message).toMatch(
          new RegExp(`^active rollout ${winner} already covers default/back-${round}-[ab] \\(and 1 more targets\\); wait for it, or abort it$`),
        );
      }
      expect((await on(round).rollouts.require(winner)).state).toBe('PENDING');
      expect((await on(1).rollouts.require(original.id)).state).toBe('ABORTED');
    }
  });

  it('commits none of a supersede’s aborts when its key is taken meanwhile by a launch it does not wait for', async () => {
    const pools = ['key-taken-a'];
    const predecessor = (await on(0).launcher.launch(bump(pools, 'agent:v2'))).rollout;
    // Another kind's writer (another launch lock) inserts a rollout under the key and holds its transaction open.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const hasInserted = new Promise<void>((resolve) => (inserted = resolve));
    const other = on(1).store.transaction(function* (tx) {
      yield* tx.insertRollout(
        {
          id: 'ro_other_kind',
          kind: 'NODE_AGENT',
          fromVersion: null,
          toVersion: 'x',
          selector: '{}',
          strategy: '{}',
          causeActor: null,
          causeRunUrl: null,
          causeCommit: null,
          causeMessage: null,
          idempotencyKey: 'taken-meanwhile',
          idempotencyScope: 'anonymous',
          rollbackOfId: null,
          startedBy: 'anonymous',
        },
        new Date(),
      );
      inserted();
      yield held;
    });
    try {
      await hasInserted;
      const launch = on(0).launcher.launch(bump(pools, 'agent:v3', { supersede: true, idempotencyKey: { scope: 'anonymous', key: 'taken-meanwhile' } }));
      launch.catch(() => undefined);
      await until('the launch to wait for the other insert of its key', async () => {
        const { rows } = await server().admin<{ n: number }>(`SELECT COUNT(*)::int AS n FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted`);
        return rows[0]!.n > 0;
      });
      release();
      await other;
      await expect(launch).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('ro_other_kind') });
      // The predecessor was not aborted for a rollout that was never created.
      expect((await on(1).rollouts.require(predecessor.id)).state).toBe('PENDING');
    } finally {
      release();
    }
  });

  it('lets one of concurrent changes of one ClusterVersion through, even for different clusters', async () => {
    const CV = 'cv-race';
    const component = (name: string, image: string) => ({
      statefulset: {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name },
        spec: { template: { spec: { containers: [{ name, image }] } } },
      },
    });
    const cv: ClusterVersionView = {
      name: CV,
      resourceVersion: '1',
      specVersion: 'spec-000000000000',
      apiServerImage: null,
      controllerManagerImage: null,
      etcdImage: null,
      spec: { apiServer: component('apiserver', 'registry.k8s.io/kube-apiserver:v1.30.0') },
    };
    const clusters: VirtualClusterView[] = Array.from({ length: RACERS }, (_, i) => ({
      namespace: 'default',
      name: `vc-${i}`,
      clusterVersionName: CV,
      phase: 'Running',
      clusterNamespace: null,
      reason: null,
      message: null,
      appliedResourceVersion: '1',
      appliedSpecVersion: 'spec-000000000000',
      upToDate: true,
      readyForUpgrade: true,
      upgrading: false,
    }));
    // The cluster side as the vcluster controllers' caches would answer it (this test is about the history).
    const queries: VirtualClusterQueries = {
      partialUpgradeEnabled: () => true,
      virtualClusters: async () => clusters,
      virtualCluster: async (namespace, name) => clusters.find((c) => c.namespace === namespace && c.name === name),
      clusterVersions: async () => [cv],
      clusterVersion: async (name) => (name === CV ? cv : undefined),
      driftItems: async () => [],
    };
    const domainOf = (r: Replica) => ({ rollouts: r.rollouts, launcher: r.launcher, virtualClusters: queries }) as unknown as Domain;
    for (let round = 0; round < ROUNDS; round++) {
      // Each one a different change for a different cluster: only the ClusterVersion rule stands between them.
      const { created, refused } = await settle(
        Array.from({ length: RACERS }, (_, i) =>
          bumpClusterVersion(
            domainOf(on(i)),
            bumpClusterVersionInput.parse({ clusterVersion: CV, apiServer: { args: [`-v=${round}${i}`] }, clusters: [`default/vc-${i}`] }),
            'anonymous',
          ),
        ),
      );
      expect(created).toHaveLength(1);
      const winner = created[0]!.rollout.id;
      expect(refused).toHaveLength(RACERS - 1);
      for (const error of refused) {
        expect(error.code).toBe('CONFLICT');
        expect(error.message).toBe(`active rollout ${winner} is changing ClusterVersion ${CV}; wait for it, or abort it first`);
      }
      await on(round).rollouts.abort(winner);
    }
  });
});
