import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { loadConfig } from '../../../../src/config.js';
import { hostOverSim, type TestControllerHost } from '../../../helpers/controllerHost.js';
import { setupVirtualClusters, type VirtualClusterOptions, type VirtualClusterRuntime } from '../../../../src/kinds/virtualCluster/controller/index.js';
import { InProcessEventBus } from '../../../../src/domain/EventBus.js';
import { EventLog } from '../../../../src/domain/EventLog.js';
import type { StoredEvent } from '../../../../src/domain/events.js';
import { createKubeClients, type KubeClients } from '../../../../src/kube/index.js';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../../../src/sim/index.js';
import { Resources } from '../../../../src/sim/store/resources.js';
import type { KubeObject } from '../../../../src/sim/types.js';
import { openDatabase, type Database } from '../../../../src/store/db.js';
import { until } from '../../../helpers/until.js';

export const CV_NAME = 'cv-sample-np';
export const VC_NS = 'default';

export interface Harness {
  sim: Simulator;
  db: Database;
  events: EventLog;
  clients: KubeClients;
  manager: TestControllerHost;
  runtime: VirtualClusterRuntime;
  registry: Registry;
  /**
   * Stops the controllers and starts a fresh manager (new caches, queues and metrics) on the same simulator and history:
   * a restart or failover, with `vcluster` options changed when given.
   */
  restart(vcluster?: VirtualClusterOptions): Promise<void>;
  vc(name: string): KubeObject;
  cv(): KubeObject;
  /** The cluster's control-plane object of `type` in its cluster namespace. */
  controlPlane(vcName: string, type: 'statefulsets' | 'services' | 'secrets', name: string): KubeObject | undefined;
  /** Changes the ClusterVersion spec in the store (as an operator's kubectl edit would). */
  editClusterVersion(edit: (spec: any) => void): string;
  /** Adds the upstream opt-in label by hand. */
  optIn(vcName: string): void;
  /** Waits until the cluster's opt-in label is gone (the upgrade ended). */
  upgradeEnded(vcName: string, timeoutMs?: number): Promise<KubeObject>;
  observations(): Promise<StoredEvent[]>;
  /** Waits until at least `count` observations are recorded, and returns them all. */
  observed(count: number, timeoutMs?: number): Promise<StoredEvent[]>;
  metric(name: string, labels?: Record<string, string>): Promise<number | undefined>;
  waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

/** The simulator (zero delays, demo fleet: 2 VirtualClusters of cv-sample-np) + a real TestControllerHost running the vcluster controllers over HTTP. */
export async function startHarness(options: { sim?: SimulatorOptions; vcluster?: VirtualClusterOptions } = {}): Promise<Harness> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-vcluster-'));
  const sim = await startSimulator({ delays: zeroDelays, fleet: 'demo', ...options.sim });
  const db = await openDatabase(`file:${path.join(dir, 'test.db')}`);
  const events = new EventLog(db.store, new InProcessEventBus());
  const registry = new Registry();
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const config = loadConfig({ LOG_LEVEL: 'silent', ROLLPLANE_KUBE: 'sim', DATABASE_URL: `file:${path.join(dir, 'test.db')}` }, []);
  const clients = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 10_000, burst: 10_000, registry });
  const newManager = (reg: Registry) => hostOverSim({ sim, config, logger, events, store: db.store, registry: reg, clients });
  const manager = newManager(registry);
  const runtime = setupVirtualClusters(manager, { pollIntervalMs: 50, ...options.vcluster });
  await manager.start();

  const store = sim.store;
  const vc = (name: string) => store.get(Resources.virtualclusters, VC_NS, name)!;
  // 45 s: RSA-2048 keys (upstream's, the default) cost ~10× the CPU of ECDSA ones, and the suite runs on a busy 2-core machine.
  const waitFor: Harness['waitFor'] = (what, check, timeoutMs = 45_000) => until(what, check, { timeoutMs, intervalMs: 10 });
  const harness: Harness = {
    sim,
    db,
    events,
    clients,
    manager,
    runtime,
    registry,
    async restart(vcluster) {
      await harness.manager.stop();
      harness.registry = new Registry();
      harness.manager = newManager(harness.registry);
      harness.runtime = setupVirtualClusters(harness.manager, { pollIntervalMs: 50, ...options.vcluster, ...vcluster });
      await harness.manager.start();
    },
    vc,
    cv: () => store.get(Resources.clusterversions, undefined, CV_NAME)!,
    controlPlane: (vcName, type, name) => store.get(Resources[type], vc(vcName).status.clusterNamespace, name),
    editClusterVersion(edit) {
      const cv = structuredClone(store.get(Resources.clusterversions, undefined, CV_NAME)!);
      edit(cv.spec);
      return store.update(Resources.clusterversions, cv).metadata.resourceVersion!;
    },
    optIn(vcName) {
      const current = structuredClone(vc(vcName));
      current.metadata.labels = { ...current.metadata.labels, 'tenancy.x-k8s.io/ready-for-upgrade': 'true' };
      store.update(Resources.virtualclusters, current);
    },
    upgradeEnded: (vcName, timeoutMs) =>
      waitFor(
        `the upgrade of ${vcName} to end`,
        () => {
          const current = vc(vcName);
          return current.metadata.labels?.['tenancy.x-k8s.io/ready-for-upgrade'] ? undefined : current;
        },
        timeoutMs,
      ),
    observations: () => events.listAfter({ types: ['ClusterUpgradeObserved'] }, undefined, 1000),
    async observed(count, timeoutMs = 45_000) {
      let have = 0;
      return until(
        () => `${count} upgrade observations (have ${have})`,
        async () => {
          const all = await events.listAfter({ types: ['ClusterUpgradeObserved'] }, undefined, 1000);
          have = all.length;
          return all.length >= count && all;
        },
        { timeoutMs, intervalMs: 10 },
      );
    },
    async metric(name, labels = {}) {
      const metric = harness.registry.getSingleMetric(name.replace(/_(count|sum|bucket)$/, ''));
      if (!metric) return undefined;
      const values = (await metric.get()).values;
      const match = (values as { metricName?: string; labels: Record<string, unknown>; value: number }[]).find(
        (v) => (v.metricName ?? name) === name && Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
      );
      return match?.value;
    },
    waitFor,
    async close() {
      await harness.manager.stop();
      await db.close();
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return harness;
}
