import type { GateAttempt, GateFacts, GateRef, GateType } from '../domain/gates/registry.js';
import { type GateLooks, nextAttemptAt } from '../domain/gates/looks.js';
import type { GateProgress } from '../domain/waves/progress.js';
import { ValidationError } from '../errors.js';
import { type AlertGateConfig, alertGateProgress, parseAlertGateConfig } from './alertGate.js';
import { type AnalysisGateRef, AnalysisGates, type AnalysisGatesDeps } from './AnalysisGates.js';
import { AnalysisUnavailableError } from './errors.js';
import type { AnalysisTemplateStore } from './model.js';
import { AnalysisTemplates } from './namedTemplates.js';
import { PrometheusClient, type PrometheusClientOptions } from './PrometheusClient.js';
import { type AnalysisTemplate, MAX_ARG_VALUE_LENGTH, parseAnalysisTemplate, type ResolvedArgs, resolveArgs, unsafeArgValue } from './template.js';

/**
 * The ANALYSIS and ALERT gate types as entries of a staged run's gate registry (src/domain/gates/registry.ts; ADR
 * 0067, ADR 0068). Each checks its JSON config at submit time (BAD_USER_INPUT with the field path; UNAVAILABLE when
 * a metric or the alert gate has no Prometheus to ask), starts its work when the gate opens — an analysis run, an
 * alert look in the background — and answers its progress from SQL only: the gate's analysis runs, or its kept looks.
 * So a new leader answers the same, and no engine pass waits on Prometheus.
 */

export interface AnalysisGateConfig {
  template: AnalysisTemplate;
  /** Values of the template's own arguments (never the built-ins rollplane resolves). */
  args: Record<string, string>;
  /** An Error decision (Prometheus unreachable past consecutiveErrorLimit) fails the gate instead of holding it. */
  errorFails: boolean;
}

/** `config.template` refusals name the field inside the gate's config, not inside a bare template. */
function templateOf(value: unknown, path: string, values: Readonly<Record<string, string>>): AnalysisTemplate {
  try {
    return parseAnalysisTemplate(value, values);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const field = String(error.details.field ?? '');
    const reason = error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
    throw new ValidationError(field ? `${path}.template.${field}` : `${path}.template`, reason);
  }
}

const ANALYSIS_FIELDS = ['template', 'templateName', 'args', 'errorFails'];

export function parseAnalysisGateConfig(input: unknown, path = 'config'): AnalysisGateConfig {
  if (!input || typeof input !== 'object' || Array.isArray(input)) throw new ValidationError(path, 'must be an object');
  const config = input as Record<string, unknown>;
  for (const key of Object.keys(config)) {
    if (!ANALYSIS_FIELDS.includes(key)) throw new ValidationError(`${path}.${key}`, `is not supported (an analysis gate takes ${ANALYSIS_FIELDS.join(', ')})`);
  }
  if (config.template === undefined) {
    if (config.templateName !== undefined)
      throw new ValidationError(`${path}.templateName`, 'names no stored analysis template here (it is resolved when a rollout is launched)');
    throw new ValidationError(`${path}.template`, 'is required: an Argo Rollouts AnalysisTemplate (YAML or JSON), or templateName');
  }
  if (config.errorFails !== undefined && typeof config.errorFails !== 'boolean') throw new ValidationError(`${path}.errorFails`, 'must be true or false');
  const args: Record<string, string> = {};
  if (config.args !== undefined) {
    if (!config.args || typeof config.args !== 'object' || Array.isArray(config.args))
      throw new ValidationError(`${path}.args`, 'must be an object of argument values');
    for (const [name, value] of Object.entries(config.args)) {
      if (typeof value !== 'string') throw new ValidationError(`${path}.args.${name.slice(0, 40)}`, 'must be a string');
      if (value.length > MAX_ARG_VALUE_LENGTH)
        throw new ValidationError(`${path}.args.${name.slice(0, 40)}`, `is longer than ${MAX_ARG_VALUE_LENGTH} characters`);
      const unsafe = unsafeArgValue(value);
      if (unsafe) throw new ValidationError(`${path}.args.${name.slice(0, 40)}`, unsafe);
      Object.defineProperty(args, name, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  // config.args may give the template's arguments that have no value of their own.
  const template = templateOf(config.template, path, args);
  const declared = new Set(template.args.map((a) => a.name));
  for (const name of Object.keys(args)) {
    if (!declared.has(name)) throw new ValidationError(`${path}.args.${name.slice(0, 40)}`, 'is not an argument the template declares');
  }
  return { template, args, errorFails: config.errorFails === true };
}

/** A version's tag when it is an image reference (`repo/name:tag`), else the version itself (ADR 0068). */
export function versionArg(version: string): string {
  const slash = version.lastIndexOf('/');
  const colon = version.lastIndexOf(':');
  const at = version.indexOf('@');
  if (at >= 0) return version.slice(at + 1);
  return colon > slash ? version.slice(colon + 1) : version;
}

/** The built-in arguments of a wave's gate: the run's version, the wave's clusters (a regex alternation), its name. */
export function gateArgs(gate: GateRef): ResolvedArgs {
  return {
    version: versionArg(gate.version),
    ...(gate.baselineVersion ? { baselineVersion: versionArg(gate.baselineVersion) } : {}),
    cluster: gate.wave.clusters.join('|'),
    wave: gate.wave.name,
  };
}

function analysisRef(gate: GateRef): AnalysisGateRef {
  return { rolloutId: gate.rolloutId, gateKey: gate.key, cluster: gate.wave.clusters.join(','), target: null, wave: gate.wave.ordinal };
}

/** `prometheus(address)`: the client for an address, or rollplane's configured Prometheus (undefined: none). */
type Clients = (address: string | undefined) => PrometheusClient | undefined;

/** Refused at submit, UNAVAILABLE, when a metric gives no address and rollplane has no Prometheus (ROLLPLANE_PROMETHEUS_URL). */
function assertPrometheus(template: AnalysisTemplate, args: Record<string, string>, prometheus: Clients, path: string): void {
  for (const [i, metric] of template.metrics.entries()) {
    let address: string | undefined;
    try {
      address = metric.address ? resolveArgs(metric.address, template, args) : undefined;
    } catch {
      continue; // an address from a built-in argument: resolved when the run starts
    }
    if (!prometheus(address)) {
      throw new AnalysisUnavailableError(
        'PROMETHEUS_NOT_CONFIGURED',
        `${path}.template.metrics[${i}]: metric ${JSON.stringify(metric.name)} gives no provider.prometheus.address and rollplane has no Prometheus (set ROLLPLANE_PROMETHEUS_URL)`,
      );
    }
  }
}

export function analysisGateType(gates: AnalysisGates, prometheus: Clients, named?: Pick<AnalysisTemplates, 'resolve'>): GateType {
  return {
    takesDecisions: false,
    // `templateName` → the stored template's text, copied into the config that is kept (ADR 0071).
    ...(named ? { resolve: (config: unknown, field: string) => named.resolve(config, field) } : {}),
    check(config, field) {
      const parsed = parseAnalysisGateConfig(config, field);
      assertPrometheus(parsed.template, parsed.args, prometheus, field);
      return config as Record<string, unknown>;
    },
    // From SQL only: the gate's latest analysis run. While it measures, the engine is woken when it decides (onEnded)
    // and looks again every RELOOK_MS anyway, so a lost wake-up (a store error, a leader change) costs a delay only.
    async progress(config, facts) {
      const progress = await gates.progress(analysisRef(facts.gate), { errorFails: config.errorFails === true });
      return progress.state === 'WAITING' && !progress.holds && progress.until === undefined
        ? { ...progress, until: new Date(facts.now.getTime() + RELOOK_MS) }
        : progress;
    },
    // Idempotent: records attempt 1 once (across leaders), or continues the latest run here if it still measures.
    async open(config, facts) {
      const parsed = parseAnalysisGateConfig(config, 'config');
      await gates.open(analysisRef(facts.gate), parsed.template, { ...gateArgs(facts.gate), ...parsed.args });
    },
    // Attempt n+1, linked to the latest, with the same template and arguments; its progress is read from it.
    async retry(_config, facts) {
      await gates.retry(analysisRef(facts.gate));
    },
  };
}

/** How often the engine looks again at a gate whose answer is on its way (woken at once when it comes). */
const RELOOK_MS = 30_000;

/** The alert gate's answer from its kept looks (none yet: it is asking, and is looked at again if no answer comes). */
export function alertProgress(config: AlertGateConfig, attempts: readonly GateAttempt[], now: Date): GateProgress {
  const last = attempts.at(-1);
  if (!last) {
    return { state: 'WAITING', reason: `asking Prometheus whether ${config.alerts.join(', ')} fire`, until: new Date(now.getTime() + config.timeoutMs + 1000) };
  }
  if (last.answer === 'PROCEED') return { state: 'PASSED', reason: last.reason };
  return { state: 'WAITING', reason: last.reason, until: nextAttemptAt(last.at, attempts, config.recheckMs) };
}

export function alertGateType(prometheus: Clients, looks: GateLooks): GateType {
  return {
    takesDecisions: false,
    check(config, field) {
      const parsed = parseAlertGateConfig(config, field);
      if (!prometheus(parsed.address)) {
        throw new AnalysisUnavailableError(
          'PROMETHEUS_NOT_CONFIGURED',
          `${field}: the alert gate gives no address and rollplane has no Prometheus (set ROLLPLANE_PROMETHEUS_URL)`,
        );
      }
      return config as Record<string, unknown>;
    },
    progress: (config, facts) => alertProgress(parseAlertGateConfig(config), facts.attempts, facts.now),
    // Asks Prometheus in the background when the next look is due; the answer is kept, then the rollout is woken.
    async open(config, facts: GateFacts) {
      const parsed = parseAlertGateConfig(config);
      const due = nextAttemptAt(facts.openedAt, facts.attempts, parsed.recheckMs);
      if (!due) return;
      const ask = async (signal: AbortSignal) => {
        const answer = await alertGateProgress(parsed, prometheus(parsed.address), new Date(), { signal });
        return answer.state === 'PASSED'
          ? { answer: 'PROCEED' as const, afterMs: null, reason: answer.reason }
          : { answer: 'WAIT' as const, afterMs: parsed.recheckMs, reason: answer.reason };
      };
      // One row per change of answer: the same alerts still firing move the latest row's `at` on (ADR 0071).
      looks.start(facts.gate, facts.attempts.length, due, parsed.timeoutMs + 1000, ask, { repeatOf: facts.attempts.at(-1) });
    },
  };
}

/**
 * Prometheus clients by address, one per address: a gate's own `address`, or `defaultUrl` (rollplane's configured
 * Prometheus) when it names none; undefined when neither exists.
 */
export function prometheusClients(defaultUrl: string | undefined, options: PrometheusClientOptions = {}): Clients {
  const clients = new Map<string, PrometheusClient>();
  return (address) => {
    const url = address ?? defaultUrl;
    if (!url) return undefined;
    const known = clients.get(url);
    if (known) return known;
    const client = new PrometheusClient(url, options);
    clients.set(url, client);
    return client;
  };
}

export interface GateTypesDeps extends Omit<AnalysisGatesDeps, 'prometheus'> {
  /** rollplane's Prometheus, for gates that name no address. */
  prometheusUrl: string | undefined;
  looks: GateLooks;
  /** Where named templates are kept (ADR 0071); absent: `templateName` is refused. */
  templates?: AnalysisTemplateStore;
}

/**
 * What wiring needs: the service (call `resume()` when this replica starts leading, `standDown()` when it stops) and
 * the two registry entries, sharing one set of Prometheus clients.
 */
export function createGateTypes(deps: GateTypesDeps): {
  gates: AnalysisGates;
  templates: AnalysisTemplates | undefined;
  types: { ANALYSIS: GateType; ALERT: GateType };
} {
  const { prometheusUrl, looks, templates: templateStore, ...rest } = deps;
  const prometheus = prometheusClients(prometheusUrl);
  const gates = new AnalysisGates({ ...rest, prometheus });
  // The named templates are checked by the inline check, and the ANALYSIS type resolves names through them.
  const inline = analysisGateType(gates, prometheus);
  const templates = templateStore ? new AnalysisTemplates(templateStore, inline) : undefined;
  const ANALYSIS = templates ? analysisGateType(gates, prometheus, templates) : inline;
  return { gates, templates, types: { ANALYSIS, ALERT: alertGateType(prometheus, looks) } };
}
