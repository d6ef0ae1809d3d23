import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { loadConfig } from '../../../../src/config.js';
import { hostOverSim, type TestControllerHost } from '../../../helpers/controllerHost.js';
import { setupAgentPools, type AgentPoolOptions, type AgentPoolRuntime } from '../../../../src/kinds/agentPool/controller/index.js';
import { InProcessEventBus } from '../../../../src/domain/EventBus.js';
import { EventLog } from '../../../../src/domain/EventLog.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../../../src/sim/index.js';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { openDatabase, type Database } from '../../../../src/store/db.js';
import { until } from '../../../helpers/until.js';
import type { KubeObject, StoreEvent } from '../../../../src/sim/types.js';

export interface Harness {
  sim: Simulator;
  db: Database;
  events: EventLog;
  manager: TestControllerHost;
  runtime: AgentPoolRuntime;
  registry: Registry;
  /** Kubernetes API writes the simulator served, by verb. */
  writes: { create: number; update: number; patch: number; delete: number };
  pool(name: string, namespace?: string): KubeObject | undefined;
  pod(name: string): KubeObject | undefined;
  waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

export const AGENT_NS = 'harvester-system';

/** The simulator (zero delays) + a real TestControllerHost with the agent-pool controllers, over HTTP via client-node. */
export async function startHarness(
  options: { fleet?: SimulatorOptions['fleet']; sim?: SimulatorOptions; agent?: AgentPoolOptions; existingSim?: Simulator } = {},
): Promise<Harness> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-agentpool-'));
  const writes = { create: 0, update: 0, patch: 0, delete: 0 };
  const sim =
    options.existingSim ??
    (await startSimulator({
      delays: zeroDelays,
      fleet: options.fleet ?? 'pools=3,nodes=3',
      hooks: {
        beforeRequest: (info) => {
          if (info.verb in writes) writes[info.verb as keyof typeof writes]++;
        },
      },
      ...options.sim,
    } as SimulatorOptions));
  const db = await openDatabase(`file:${path.join(dir, 'test.db')}`);
  const events = new EventLog(db.store, new InProcessEventBus());
  const registry = new Registry();
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const config = loadConfig({ LOG_LEVEL: 'silent', ROLLPLANE_KUBE: 'sim', DATABASE_URL: `file:${path.join(dir, 'test.db')}` }, []);
  const manager = hostOverSim({ sim, config, logger, events, store: db.store, registry });
  const runtime = setupAgentPools(manager, { stuckGraceSeconds: 0, ...options.agent });
  await manager.start();
  const types = {
    pools: sim.store.resourceType('network.harvesterhci.io', 'ippools')!,
    pods: sim.store.resourceType('', 'pods')!,
  };
  return {
    sim,
    db,
    events,
    manager,
    runtime,
    registry,
    writes,
    pool: (name, namespace = 'default') => sim.store.get(types.pools, namespace, name),
    pod: (name) => sim.store.get(types.pods, AGENT_NS, name),
    waitFor: (what, check, timeoutMs = 10_000) => until(what, check, { timeoutMs, intervalMs: 10 }),
    async close() {
      await manager.stop();
      await db.close();
      if (!options.existingSim) await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function condition(pool: KubeObject | undefined, type: string): { status: string; reason?: string; message?: string } | undefined {
  return pool?.status?.conditions?.find((c: { type: string }) => c.type === type);
}

export type { StoreEvent };
