import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { createGateTypes } from '../analysis/gateTypes.js';
import { TargetAnalysisGates } from '../analysis/targetGates.js';
import type { Config } from '../config.js';
import { ConfigError } from '../configParsers.js';
import { GateLooks } from '../domain/gates/looks.js';
import { GATE_TYPES, type GateTypes } from '../domain/gates/registry.js';
import type { Logger } from '../log.js';
import type { AppMetrics } from '../metrics.js';
import { externalCheckGateType } from '../notify/externalCheckGate.js';
import { TargetGuard } from '../notify/targetGuard.js';
import type { Database } from '../store/db.js';
import { systemClock } from '../util/clock.js';
import { VERSION } from '../version.js';

/**
 * The gate types of this rollplane (ADR 0068): the built-ins (APPROVAL, TIMED_WAIT) and the three that need its
 * services — ANALYSIS and ALERT (rollplane's Prometheus, ROLLPLANE_PROMETHEUS_URL) and EXTERNAL_CHECK (the operator's
 * signing secrets, the notifications' SSRF guard). Their background work (analysis runs, attempts) runs only while
 * this replica leads (`lead`), and wakes the rollout it answered for (`wakeWith`: the engine's enqueue).
 */
/** The background looks of the gates that ask outside (external checks, alerts), each answer kept in `db`. */
export function gateLooksOn(db: Database, wake: (rolloutId: string) => void, logger: Logger): GateLooks {
  return new GateLooks({
    record: (attempt) =>
      db.store.transaction(function* (tx) {
        return yield* tx.insertGateAttempt(attempt);
      }),
    extend: (gateId, seq, at) =>
      db.store.transaction(function* (tx) {
        return yield* tx.extendGateAttempt(gateId, seq, at);
      }),
    wake,
    logger,
  });
}

export function startGateTypes(config: Config, { db, metrics, logger }: { db: Database; metrics: AppMetrics; logger: Logger }) {
  const listeners: ((rolloutId: string) => void)[] = [];
  const wake = (rolloutId: string) => {
    for (const listener of listeners) listener(rolloutId);
  };
  const log = logger.child({ component: 'gates' });
  const looks = gateLooksOn(db, wake, log);
  // Nothing measured or asked before this replica leads.
  looks.stop();
  const analysis = createGateTypes({
    store: db.analysis,
    clock: systemClock,
    metrics: metrics.analysis,
    logger: log,
    prometheusUrl: config.gates.prometheusUrl,
    looks,
    templates: db.analysis,
    onEnded: (run) => wake(run.rolloutId),
  });
  const types: GateTypes = {
    ...GATE_TYPES,
    ...analysis.types,
    EXTERNAL_CHECK: externalCheckGateType({
      looks,
      guard: new TargetGuard(config.notifications.allowNetworks),
      secrets: checkSecrets(config.gates.externalCheckSecretsFile),
      timeoutMs: config.notifications.timeoutMs,
      userAgent: `rollplane/${VERSION}`,
    }),
  };
  let leading = false;
  return {
    types,
    analysis: analysis.gates,
    /** Analysis templates by name (ADR 0071), checked as inline ones. */
    templates: analysis.templates,
    /** Analysis between the targets of a rollout without waves (ADR 0071), on the same service. */
    targetGates: new TargetAnalysisGates(analysis.gates, db.analysis),
    /** The engine's enqueue: a gate that got an answer wakes its rollout. */
    wakeWith(listener: (rolloutId: string) => void): void {
      listeners.push(listener);
    },
    /** Measures and asks while `manager` leads: resumes the analysis runs a previous leader left RUNNING. */
    lead(manager: { onStartedLeading(listener: () => void | Promise<void>): void; onStoppedLeading(listener: () => void | Promise<void>): void }): void {
      manager.onStartedLeading(async () => {
        leading = true;
        looks.resume();
        const picked = await analysis.gates.resume();
        if (picked.length > 0) log.info({ runs: picked.map((r) => r.id) }, 'continuing the analysis runs a previous leader left measuring');
      });
      manager.onStoppedLeading(async () => {
        leading = false;
        looks.stop();
        await analysis.gates.standDown();
      });
    },
    leading: () => leading,
    async stop(): Promise<void> {
      looks.stop();
      await analysis.gates.close();
    },
  };
}

/** The operator's signing secrets for external checks: a YAML map of names to non-empty strings. */
function checkSecrets(file: string | undefined): ReadonlyMap<string, string> {
  if (!file) return new Map();
  const setting = 'ROLLPLANE_EXTERNAL_CHECK_SECRETS_FILE';
  let parsed: unknown;
  try {
    parsed = parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(setting, `cannot read ${file}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(setting, `${file} must be a YAML map of names to secrets`);
  const secrets = new Map<string, string>();
  for (const [name, secret] of Object.entries(parsed)) {
    // Never the value in the message: it is a secret.
    if (typeof secret !== 'string' || secret.length < 16)
      throw new ConfigError(setting, `${file}: secret "${name.slice(0, 40)}" must be a string of at least 16 characters`);
    secrets.set(name, secret);
  }
  return secrets;
}
