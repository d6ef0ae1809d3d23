import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import type { AgentPoolOptions } from '../../../src/kinds/agentPool/controller/index.js';
import { zeroDelays, type SimDelays } from '../../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import type { KubeObject } from '../../../src/sim/types.js';
import { afterEach } from 'vitest';
import { type ServiceSlot, stopSlot } from '../../helpers/crashPoint.js';
import { gql } from '../../helpers/graphql.js';
import { MEMBER_FLEET_ENV, registerMembers } from '../../helpers/memberFleet.js';
import { until } from '../../helpers/until.js';

export const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
export const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
export const AGENT_NS = 'harvester-system';
/** The simulated vm-dhcp-controller's Deployment (fleets with `upstream=vm-dhcp`). */
export const CONTROLLER = { namespace: 'harvester-system', name: 'harvester-vm-dhcp-controller' };

/** A helm upgrade of the simulated vm-dhcp-controller to another agent image: its Deployment's `--image` changes. */
export function helmUpgrade(r: Pick<Rig, 'sim'>, image: string): void {
  const type = r.sim.store.resourceType('apps', 'deployments')!;
  const d = structuredClone(r.sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name)!) as KubeObject;
  const args: string[] = d.spec.template.spec.containers[0].args;
  args[args.indexOf('--image') + 1] = image;
  r.sim.store.update(type, d);
}

/** Environment that makes the service fast and unthrottled for tests (settings it does not know are ignored). */
export const FAST_ENV: Record<string, string> = {
  LOG_LEVEL: 'silent',
  ROLLPLANE_LEADER_ELECT: 'false',
  ROLLPLANE_KUBE_QPS: '5000',
  ROLLPLANE_KUBE_BURST: '5000',
  ROLLPLANE_MUTATIONS_PER_MINUTE: '100000',
  ROLLPLANE_MUTATION_BURST: '100000',
  // Tests poll rollouts every 20 ms for as long as the simulated cluster takes: no query-cost budget in the way.
  ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000',
  ROLLPLANE_QUERY_COST_BURST: '1000000000',
  ROLLPLANE_AUTH: 'off',
};

/** A rig and the service process run against it, for one test at a time. */
export interface RigAndService extends ServiceSlot {
  rig?: Rig;
}

/** Registers an afterEach that stops the test's service (SIGKILL unless it has exited) and closes its rig. */
export function rigPerTest(): RigAndService {
  const t: RigAndService = {};
  afterEach(async () => {
    await stopSlot(t);
    await t.rig?.close();
    t.rig = undefined;
  });
  return t;
}

/** The environment of a service process (child.ts startService) run against `rig`'s simulator and database. */
export function serviceEnv(rig: Pick<Rig, 'sim' | 'databaseFile'>): Record<string, string> {
  return { ...FAST_ENV, LOG_LEVEL: 'warn', DATABASE_URL: `file:${rig.databaseFile}`, ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: rig.sim.kubeconfigPath };
}

/**
 * Agent pods created from now on, per pool, kept up to date from the simulator's store: a pool recreated twice shows 2.
 * (The fleet's own pods are created before the call.)
 */
export function agentCreationsPerPool(rig: Pick<Rig, 'sim'>): Map<string, number> {
  const created = new Map<string, number>();
  rig.sim.store.subscribe((event) => {
    if (event.type !== 'ADDED' || event.resource.plural !== 'pods') return;
    const pool = event.object.metadata.labels?.['network.harvesterhci.io/ippool-name'];
    if (pool) created.set(pool, (created.get(pool) ?? 0) + 1);
  });
  return created;
}

export interface Rig {
  sim: Simulator;
  app: App;
  url: string;
  databaseFile: string;
  /** Kubernetes API writes served by the simulator, by verb (dry runs are not writes). */
  writes: Record<string, number>;
  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<T>;
  pool(name: string): KubeObject | undefined;
  agent(name: string): KubeObject | undefined;
  /** Agent pods (not terminating) that are Ready, by pool name. */
  readyAgents(): Map<string, KubeObject>;
  waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  /** Stops the service only; the simulator (and the database file) stay. */
  stopApp(): Promise<void>;
  close(): Promise<void>;
}

export interface RigOptions {
  fleet?: string;
  delays?: Partial<SimDelays>;
  agent?: AgentPoolOptions;
  env?: Record<string, string>;
  /** Start no service (e.g. a child process will be the service). */
  noApp?: boolean;
}

/**
 * An external simulator (so the test can watch its store, crash nodes and count writes) and the real service in
 * `kubeconfig` mode pointing at it, with a fresh SQLite file.
 */
export async function startRig(options: RigOptions = {}): Promise<Rig> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-agentpool-'));
  const databaseFile = path.join(dir, 'rollplane.db');
  const writes: Record<string, number> = { create: 0, update: 0, patch: 0, delete: 0 };
  const sim = await startSimulator({
    fleet: options.fleet ?? 'pools=4,nodes=3',
    delays: { ...zeroDelays, ...options.delays },
    kubeconfigPath: path.join(dir, 'kubeconfig'),
    hooks: {
      beforeRequest: (info) => {
        if (info.verb in writes && !info.dryRun) writes[info.verb]!++;
      },
    },
  });
  const env = {
    ...FAST_ENV,
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: `file:${databaseFile}`,
    ROLLPLANE_KUBE: 'kubeconfig',
    KUBECONFIG: sim.kubeconfigPath,
    ...options.env,
  };
  const start = async () => {
    const config = loadConfig(env, []);
    return startApp({ ...config, agentPools: { stuckGraceSeconds: 120, ...options.agent } } as typeof config, {
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    });
  };
  let app: App | undefined = options.noApp ? undefined : await start();
  const types = { pools: sim.store.resourceType('network.harvesterhci.io', 'ippools')!, pods: sim.store.resourceType('', 'pods')! };
  const rig: Rig = {
    sim,
    get app() {
      return app!;
    },
    get url() {
      return app!.url;
    },
    databaseFile,
    writes,
    async gql(query, variables) {
      const res = await gql(app!.url, query, variables);
      if (res.errors) throw Object.assign(new Error(res.errors.map((e) => `${e.extensions?.code}: ${e.message}`).join('; ')), { errors: res.errors });
      return res.data;
    },
    pool: (name) => sim.store.get(types.pools, 'default', name),
    agent: (name) => sim.store.get(types.pods, AGENT_NS, `default-${name}-agent`),
    readyAgents() {
      const out = new Map<string, KubeObject>();
      for (const pod of sim.store.list(types.pods, AGENT_NS)) {
        const pool = pod.metadata.labels?.['network.harvesterhci.io/ippool-name'];
        const ready =
          !pod.metadata.deletionTimestamp &&
          (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
        if (pool && ready) out.set(pool, pod);
      }
      return out;
    },
    // A safety net for a hang, not a measure: it waits on the condition, and on a loaded 2-core machine (CI beside other
    // work) an upstream rolling update takes several times what it takes idle. 20 s was reached at load 16.
    waitFor: (what, check, timeoutMs = 120_000) => until(what, check, timeoutMs),
    async stopApp() {
      await app?.stop();
      app = undefined;
    },
    async close() {
      await app?.stop();
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return rig;
}

export const BUMP = `mutation Bump($input: BumpAgentImageInput!) {
  bumpAgentImage(input: $input) {
    created dryRun
    rollout { id state toVersion fromVersion strategy { maxUnavailable canary progressDeadlineSeconds failureThreshold autoRollback } }
    plan { namespace name fromVersion toVersion action reason }
  }
}`;

export const ROLLOUT = `query R($id: ID!) { rollout(id: $id) { id state message progress { total pending progressing succeeded failed skipped cancelled }
  targets { edges { node { namespace name state error fromVersion toVersion } } } } }`;

export async function waitForRollout(rig: Rig, id: string, states: string[], timeoutMs = 120_000): Promise<any> {
  return rig.waitFor(
    `rollout ${id} in ${states.join('|')}`,
    async () => {
      const data = await rig.gql(ROLLOUT, { id });
      return states.includes(data.rollout.state) ? data.rollout : undefined;
    },
    timeoutMs,
  );
}

/** A rig whose service also drives member `m1` (its own simulator, beside its own vm-dhcp-controller). */
export interface MemberRig {
  rig: Rig;
  /** m1's simulator. */
  m1: Simulator;
  close(): Promise<void>;
}

/**
 * `local` (`localFleet`) and one member cluster `m1` (`memberFleet`), registered through the credentials file; resolves
 * once m1 is driven by its own runtime with the agent-pool kind.
 */
export async function startMemberRig(options: { localFleet: string; memberFleet: string; delays: RigOptions['delays'] }): Promise<MemberRig> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-member-rig-'));
  const members = await startSimulatedClusters({
    clusters: [{ name: 'm1', fleet: options.memberFleet, ...(options.delays ? { delays: options.delays } : {}) }],
  });
  registerMembers(dir, members, ['m1'], () => ({}));
  const rig = await startRig({
    fleet: options.localFleet,
    ...(options.delays ? { delays: options.delays } : {}),
    env: { ...MEMBER_FLEET_ENV, ROLLPLANE_MEMBER_CLUSTERS_FILE: path.join(dir, 'member-clusters.yaml') },
  });
  await rig.waitFor('m1 driven by its own runtime', () =>
    rig.app.memberRuntimes?.snapshot().some((runtime) => runtime.cluster === 'm1' && runtime.running && runtime.kinds.includes('AGENT_POOL')),
  );
  return {
    rig,
    m1: members.clusters.get('m1')!.simulator,
    async close() {
      await rig.close();
      await members.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
