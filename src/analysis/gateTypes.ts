import type { GateProgress } from '../domain/waves/progress.js';
import { ValidationError } from '../errors.js';
import { type AlertGateConfig, alertGateProgress, parseAlertGateConfig } from './alertGate.js';
import { type AnalysisGateRef, AnalysisGates, type AnalysisGatesDeps } from './AnalysisGates.js';
import { PrometheusClient, type PrometheusClientOptions } from './PrometheusClient.js';
import { type AnalysisTemplate, parseAnalysisTemplate, type ResolvedArgs } from './template.js';

/**
 * The ANALYSIS and ALERT gate types as entries of a staged run's gate registry (issue 30 gives each gate a `type` and
 * a JSON `config`; ADR 0067). The engine reads a gate's config once, when the rollout is submitted (`parseConfig`:
 * BAD_USER_INPUT with the field path, nothing started), opens the gate at its 'open-gate' step, asks `progress` on
 * each pass, and calls `retry` / `cancel` from the API or a superseding rollout. Every answer is computed from the
 * store (analysis) or asked of Prometheus (alerts), never remembered, so a new leader answers the same.
 */

/** What the engine says about the gate it asks for: its place in the rollout and the run's built-in arguments. */
export interface GateContext extends AnalysisGateRef {
  /** version, cluster, namespace, name, wave, baselineVersion: `{{args.…}}` of a template. */
  args: ResolvedArgs;
  now: Date;
}

export interface GateTypeEntry<Config> {
  readonly type: 'ANALYSIS' | 'ALERT';
  /** Reads the gate's JSON config at submit time; `path` prefixes the field paths of refusals (`waves[1].after.config`). */
  parseConfig(config: unknown, path: string): Config;
  /** The gate is reached: start what it measures (idempotent: a second open is the same gate). */
  open(context: GateContext, config: Config): Promise<void>;
  progress(context: GateContext, config: Config): Promise<GateProgress>;
  /** Measure again (argo-rollouts#2897). */
  retry(context: GateContext, config: Config): Promise<void>;
  /** Stop measuring, recording why (a superseding rollout). */
  cancel(context: GateContext, reason: string): Promise<void>;
}

export interface AnalysisGateConfig {
  template: AnalysisTemplate;
  /** An Error decision (Prometheus unreachable past consecutiveErrorLimit) fails the gate instead of holding it. */
  errorFails: boolean;
}

/** `config.template` refusals name the field inside the gate's config, not inside a bare template. */
function templateOf(value: unknown, path: string): AnalysisTemplate {
  try {
    return parseAnalysisTemplate(value);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const field = String(error.details.field ?? '');
    const reason = error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
    throw new ValidationError(field ? `${path}.template.${field}` : `${path}.template`, reason);
  }
}

export function parseAnalysisGateConfig(input: unknown, path = 'config'): AnalysisGateConfig {
  if (!input || typeof input !== 'object' || Array.isArray(input)) throw new ValidationError(path, 'must be an object');
  const config = input as Record<string, unknown>;
  for (const key of Object.keys(config)) {
    if (key !== 'template' && key !== 'errorFails')
      throw new ValidationError(`${path}.${key}`, 'is not supported (an analysis gate takes template, errorFails)');
  }
  if (config.template === undefined) throw new ValidationError(`${path}.template`, 'is required: an Argo Rollouts AnalysisTemplate (YAML or JSON)');
  if (config.errorFails !== undefined && typeof config.errorFails !== 'boolean') throw new ValidationError(`${path}.errorFails`, 'must be true or false');
  return { template: templateOf(config.template, path), errorFails: config.errorFails === true };
}

export function analysisGateType(gates: AnalysisGates): GateTypeEntry<AnalysisGateConfig> {
  return {
    type: 'ANALYSIS',
    parseConfig: parseAnalysisGateConfig,
    async open(context, config) {
      await gates.open(context, config.template, context.args);
    },
    progress: (context, config) => gates.progress(context, { errorFails: config.errorFails }),
    async retry(context) {
      await gates.retry(context);
    },
    async cancel(context, reason) {
      await gates.cancel(context, reason);
    },
  };
}

/** `prometheus(address)`: the client for the gate's address, or rollplane's configured Prometheus (undefined: none). */
export function alertGateType(prometheus: (address: string | undefined) => PrometheusClient | undefined): GateTypeEntry<AlertGateConfig> {
  return {
    type: 'ALERT',
    parseConfig: parseAlertGateConfig,
    // Nothing to start or stop: each look asks Prometheus what fires now.
    open: async () => {},
    progress: (context, config) => alertGateProgress(config, prometheus(config.address), context.now),
    retry: async () => {},
    cancel: async () => {},
  };
}

/**
 * Prometheus clients by address, one per address: a gate's own `address`, or `defaultUrl` (rollplane's configured
 * Prometheus) when it names none; undefined when neither exists, which analysis answers UNAVAILABLE and the alert gate
 * WAITING with the reason.
 */
export function prometheusClients(
  defaultUrl: string | undefined,
  options: PrometheusClientOptions = {},
): (address: string | undefined) => PrometheusClient | undefined {
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
}

/**
 * What wiring needs: the service (call `resume()` when this replica starts leading, `close()` when it stops) and the
 * two registry entries, sharing one set of Prometheus clients.
 */
export function createGateTypes(deps: GateTypesDeps): { gates: AnalysisGates; entries: [GateTypeEntry<AnalysisGateConfig>, GateTypeEntry<AlertGateConfig>] } {
  const { prometheusUrl, ...rest } = deps;
  const prometheus = prometheusClients(prometheusUrl);
  const gates = new AnalysisGates({ ...rest, prometheus });
  return { gates, entries: [analysisGateType(gates), alertGateType(prometheus)] };
}
