import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../src/domain/ports.js';
import { afterAll, beforeAll } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';

/** A node-agent driver the test scripts: each target converges (or fails) when the test says. */
class ScriptedDriver implements RolloutDriver {
  readonly kind = 'NODE_AGENT' as const;
  readonly outcomes = new Map<string, TargetObservation>();
  async admit(): Promise<void> {}
  async observe(target: AdmittedTarget): Promise<TargetObservation> {
    return this.outcomes.get(target.name) ?? { phase: 'progressing' };
  }
}

export interface ScriptedApp {
  app: TestApp;
  /** Starts a rollout of `count` fresh nodes through the domain's launcher, as a bump would; the engine drives it. */
  launch(count: number, strategy?: Record<string, unknown>): Promise<{ id: string; nodes: string[] }>;
  /** Makes one node's target converge or fail, and tells the engine. */
  settle(node: string, outcome: TargetObservation): void;
}

/** The real server in-process (port 0, fresh SQLite, simulator) with the node-agent driver replaced by a scripted one. */
export async function startScriptedApp(): Promise<ScriptedApp> {
  const app = await startTestApp({ env: { ROLLPLANE_MUTATIONS_PER_MINUTE: '100000', ROLLPLANE_CONTROLLERS: 'on', ROLLPLANE_LEADER_ELECT: 'false' } });
  const driver = new ScriptedDriver();
  app.domain.engine.registerDriver(driver);
  let serial = 0;
  return {
    app,
    async launch(count, strategy = {}) {
      const nodes = Array.from({ length: count }, (_, i) => `node-${++serial}-${i}`);
      const result = await app.domain.launcher.launch({
        plan: {
          kind: 'NODE_AGENT',
          fromVersion: 'agent:1',
          toVersion: 'agent:2',
          selector: { namespace: 'kube-system', name: 'node-agent', canaryNodeSelector: null },
          strategy: { ...defaultStrategy(KIND_CONTRACTS.NODE_AGENT), maxUnavailable: String(count), ...strategy },
          targets: nodes.map((name) => ({ namespace: '', name, fromVersion: 'agent:1', toVersion: 'agent:2' })),
        },
        cause: { actor: 'test' },
        request: { nodes },
      });
      return { id: result.rollout.id, nodes };
    },
    settle(node, outcome) {
      driver.outcomes.set(node, outcome);
      app.domain.engine.targetChanged('NODE_AGENT', '', node);
    },
  };
}

/**
 * One scripted app for the tests of a file: started before them and closed after them (registers beforeAll and
 * afterAll), with `env()` pointing the CLI at it. Read it inside tests only.
 */
export function scriptedAppPerFile(): ScriptedApp & { env(): Record<string, string> } {
  let scripted: ScriptedApp | undefined;
  beforeAll(async () => {
    scripted = await startScriptedApp();
  });
  afterAll(async () => {
    await scripted?.app.close();
  });
  const current = () => {
    if (!scripted) throw new Error('the scripted app is read before beforeAll started it');
    return scripted;
  };
  return {
    get app() {
      return current().app;
    },
    launch: (count, strategy) => current().launch(count, strategy),
    settle: (node, outcome) => current().settle(node, outcome),
    env: () => ({ ROLLPLANE_URL: current().app.url }),
  };
}
