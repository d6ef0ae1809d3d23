import { KIND_CONTRACTS } from '../../../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../../../src/config.js';
import { hostOverSim, type TestControllerHost } from '../../../helpers/controllerHost.js';
import { setupNodeAgents, type NodeAgentOptions, type NodeAgentRuntime } from '../../../../src/kinds/nodeAgent/controller/index.js';
import type { Domain } from '../../../../src/domain/Domain.js';
import { reactToRolloutEvents } from '../../../../src/domain/engineReactions.js';
import { InProcessEventBus } from '../../../../src/domain/EventBus.js';
import { EventLog } from '../../../../src/domain/EventLog.js';
import { bumpNodeAgentImageInput } from '../../../../src/kinds/nodeAgent/contract.js';
import { parseInput } from '../../../../src/domain/kinds/strategy.js';
import { bumpNodeAgentImage, type BumpNodeAgentImageInput } from '../../../../src/kinds/nodeAgent/plan.js';
import { RolloutEngine } from '../../../../src/domain/RolloutEngine.js';
import { RolloutLauncher } from '../../../../src/domain/RolloutLauncher.js';
import { RolloutService, type Rollout } from '../../../../src/domain/RolloutService.js';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../../../src/sim/index.js';
import type { KubeObject } from '../../../../src/sim/types.js';
import { openDatabase, type Database } from '../../../../src/store/db.js';
import { until } from '../../../helpers/until.js';

export const DS_NS = 'confidential-containers-system';
export const DS_NAME = 'cloud-api-adaptor-daemonset';
export const OLD_IMAGE = 'quay.io/confidential-containers/cloud-api-adaptor:v0.10.0';
export const NEW_IMAGE = 'quay.io/confidential-containers/cloud-api-adaptor:v0.11.0';
export const BAD_IMAGE = 'quay.io/confidential-containers/cloud-api-adaptor:bad-1';

export interface Harness {
  sim: Simulator;
  db: Database;
  events: EventLog;
  rollouts: RolloutService;
  engine: RolloutEngine;
  runtime: NodeAgentRuntime;
  manager: TestControllerHost;
  bump(input: Partial<BumpNodeAgentImageInput>): Promise<Rollout>;
  waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  waitForState(rolloutId: string, states: string[], timeoutMs?: number): Promise<Rollout>;
  daemonSet(): KubeObject;
  pods(): KubeObject[];
  /** Stops the service side only (rollplane "dies"); the simulator and database stay. */
  stopService(): Promise<void>;
  /** Starts the service side again on the same simulator and database. */
  startService(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The simulator (zero delays unless told) + the real service side of node-agent rollouts: TestControllerHost with the
 * node-agent informers and gate controller, the RolloutEngine on the controller runtime, RolloutService and launcher
 * on a fresh SQLite file. Mirrors src/app.ts without HTTP.
 */
export async function startHarness(
  options: { fleet?: SimulatorOptions['fleet']; sim?: Partial<SimulatorOptions>; nodeAgents?: NodeAgentOptions; pollMs?: number } = {},
): Promise<Harness> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-nodeagent-'));
  const sim = await startSimulator({ delays: zeroDelays, fleet: options.fleet ?? 'nodes=3', ...options.sim } as SimulatorOptions);
  const dbUrl = `file:${path.join(dir, 'test.db')}`;
  const db = await openDatabase(dbUrl);
  const bus = new InProcessEventBus();
  const events = new EventLog(db.store, bus);
  const rollouts = new RolloutService(db.store, events, KIND_CONTRACTS);
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const config = loadConfig({ LOG_LEVEL: 'silent', ROLLPLANE_KUBE: 'sim', DATABASE_URL: dbUrl }, []);

  let service:
    | { manager: TestControllerHost; engine: RolloutEngine; runtime: NodeAgentRuntime; launcher: RolloutLauncher; unsubscribe: () => void }
    | undefined;

  const startService = async () => {
    const manager = hostOverSim({ sim, config, logger, events, store: db.store });
    const runtime = setupNodeAgents(manager, options.nodeAgents);
    const engine = new RolloutEngine(rollouts, logger, { pollMs: options.pollMs ?? 200 });
    engine.registerDriver(runtime.driver);
    const launcher = new RolloutLauncher(rollouts);
    const controller = manager.controller({ name: 'rollouts', workers: 2, reconciler: { reconcile: (r, signal) => engine.reconcile(r.name, signal) } });
    controller.watch({ resync: (enqueue) => void engine.pendingWork().then((ids) => ids.forEach(enqueue)) });
    engine.connect((id, afterMs) => (afterMs ? controller.enqueueAfter(id, afterMs) : controller.enqueue(id)), launcher);
    manager.onTargetChanged((kind, ns, name) => engine.targetChanged(kind, ns, name));
    const unsubscribe = reactToRolloutEvents(bus, engine);
    await manager.start();
    service = { manager, engine, runtime, launcher, unsubscribe };
  };
  await startService();

  const types = { pods: sim.store.resourceType('', 'pods')!, daemonsets: sim.store.resourceType('apps', 'daemonsets')! };
  const waitFor: Harness['waitFor'] = (what, check, timeoutMs = 15_000) => until(what, check, { timeoutMs, intervalMs: 10 });
  const stopService = async () => {
    if (!service) return;
    service.unsubscribe();
    (service.runtime.driver as { stop?: () => void }).stop?.();
    await service.manager.stop();
    service = undefined;
  };

  // The fleet's agents and peer pods start like any pod: let them settle before a test looks at the cluster.
  await waitFor('the fleet Ready', () => {
    const pods = sim.store.list(types.pods).filter((p) => p.metadata.namespace === DS_NS || p.metadata.namespace === 'peer-workloads');
    return pods.length > 0 && pods.every(isReadyPod);
  });

  return {
    sim,
    db,
    events,
    rollouts,
    get engine() {
      return service!.engine;
    },
    get runtime() {
      return service!.runtime;
    },
    get manager() {
      return service!.manager;
    },
    async bump(input) {
      const domain = { nodeAgents: service!.runtime.queries, launcher: service!.launcher } as unknown as Domain;
      const result = await bumpNodeAgentImage(
        domain,
        parseInput(bumpNodeAgentImageInput, { namespace: DS_NS, name: DS_NAME, image: NEW_IMAGE, ...input }),
        'anonymous',
      );
      return result.rollout;
    },
    waitFor,
    waitForState: (rolloutId, states, timeoutMs) =>
      waitFor(
        `rollout ${rolloutId} in ${states.join('|')}`,
        async () => {
          const r = await rollouts.get(rolloutId);
          // Terminal states also wait for the engine's finish (the driver's clean-up) to have run.
          const done = !['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'].includes(r?.state ?? '') || r?.engineState.finished === true;
          return r && states.includes(r.state) && done ? r : undefined;
        },
        timeoutMs,
      ),
    daemonSet: () => sim.store.get(types.daemonsets, DS_NS, DS_NAME)!,
    pods: () => sim.store.list(types.pods),
    stopService,
    startService,
    async close() {
      await stopService();
      await db.close();
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Facts about the simulated cluster, read straight from the simulator's store (no rollplane code involved).
// ---------------------------------------------------------------------------------------------------------------------

export function isReadyPod(pod: KubeObject): boolean {
  return (
    !pod.metadata.deletionTimestamp && (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True')
  );
}

/** Agent pods (of the DaemonSet, or handed over and still running) on each node. */
export function agentsByNode(pods: KubeObject[]): Map<string, KubeObject[]> {
  const out = new Map<string, KubeObject[]>();
  for (const pod of pods) {
    if (pod.metadata.namespace !== DS_NS || pod.metadata.labels?.['rollplane.io/node-agent'] !== 'true') continue;
    const node = pod.spec?.nodeName;
    if (!node) continue;
    out.set(node, [...(out.get(node) ?? []), pod]);
  }
  return out;
}

export function peerPodsOn(pods: KubeObject[], node: string): KubeObject[] {
  return pods.filter((p) => p.spec?.nodeName === node && p.spec?.runtimeClassName === 'kata-remote' && !p.metadata.deletionTimestamp);
}

export function agentImage(pod: KubeObject): string {
  return pod.spec.containers[0].image;
}
