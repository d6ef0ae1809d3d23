import { checkPrometheusAddress } from './prometheusAddress.js';
import type { GateProgress } from '../domain/waves/progress.js';
import { ValidationError } from '../errors.js';
import { PrometheusError, type PrometheusClient } from './PrometheusClient.js';
import { parseDuration } from './template.js';

/**
 * The alert gate (issue 33, Kured's idea; ADR 0067): nothing passes the gate while one of the named Prometheus alerts
 * fires. It asks Prometheus's own `ALERTS` series — `ALERTS{alertname=~"A|B",alertstate="firing"}` — so it sees what
 * Prometheus's rules decided, `for:` durations included (a pending alert does not hold the gate, as in Kured).
 *
 * WAITING while any fires, the firing names as the reason; PASSED when none does; WAITING with the reason when
 * Prometheus cannot be asked or answers something else — never a silent pass. Nothing is kept in memory: each look
 * asks Prometheus again, so a new leader gives the same answer.
 */

export interface AlertGateConfig {
  /** Alert names (Prometheus rule names) that hold the gate while firing. */
  alerts: string[];
  /** Only alerts carrying these labels hold the gate (e.g. `{cluster: "edge-1"}`); none: any. */
  matchLabels: Record<string, string>;
  /** Prometheus base URL; undefined → the one rollplane is configured with. */
  address: string | undefined;
  timeoutMs: number;
  /** How long a WAITING answer holds before the gate should be asked again. */
  recheckMs: number;
}

/** Prometheus refuses an alerting rule whose name is not a metric name, so nothing else can fire. */
const ALERT_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const MAX_ALERTS = 50;
const FIELDS = ['alerts', 'matchLabels', 'address', 'timeout', 'recheck'];

/** Reads an ALERT gate's JSON config; BAD_USER_INPUT with the field path (under `path`) for anything else. */
export function parseAlertGateConfig(input: unknown, path = 'config'): AlertGateConfig {
  if (!input || typeof input !== 'object' || Array.isArray(input)) throw new ValidationError(path, 'must be an object');
  const config = input as Record<string, unknown>;
  for (const key of Object.keys(config)) {
    if (!FIELDS.includes(key)) throw new ValidationError(`${path}.${key}`, `is not supported (an alert gate takes ${FIELDS.join(', ')})`);
  }
  const { alerts } = config;
  if (!Array.isArray(alerts) || alerts.length === 0 || alerts.length > MAX_ALERTS) {
    throw new ValidationError(`${path}.alerts`, `must list 1 to ${MAX_ALERTS} alert names`);
  }
  for (const [i, name] of alerts.entries()) {
    if (typeof name !== 'string' || !ALERT_NAME.test(name)) {
      throw new ValidationError(`${path}.alerts[${i}]`, `${JSON.stringify(name)} is not an alert name (a Prometheus rule name: letters, digits, _ and :)`);
    }
  }
  const matchLabels: Record<string, string> = {};
  if (config.matchLabels !== undefined) {
    const labels = config.matchLabels;
    if (!labels || typeof labels !== 'object' || Array.isArray(labels)) throw new ValidationError(`${path}.matchLabels`, 'must be an object of label values');
    for (const [name, value] of Object.entries(labels)) {
      const field = `${path}.matchLabels.${name}`;
      if (!LABEL_NAME.test(name) || name === 'alertname' || name === 'alertstate') {
        throw new ValidationError(field, 'is not a label the gate can match (a Prometheus label name other than alertname and alertstate)');
      }
      if (typeof value !== 'string' || value === '') throw new ValidationError(field, 'must be a non-empty string');
      matchLabels[name] = value;
    }
  }
  if (config.address !== undefined) checkPrometheusAddress(config.address, `${path}.address`);
  const duration = (key: 'timeout' | 'recheck', fallback: number, max: number) => {
    const value = config[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'string') throw new ValidationError(`${path}.${key}`, 'must be a duration like 10s');
    const ms = parseDuration(value, `${path}.${key}`);
    if (ms < 1000 || ms > max) throw new ValidationError(`${path}.${key}`, `must be between 1s and ${max / 1000}s`);
    return ms;
  };
  return {
    alerts: [...new Set(alerts as string[])],
    matchLabels,
    address: config.address as string | undefined,
    timeoutMs: duration('timeout', 10_000, 120_000),
    recheckMs: duration('recheck', 30_000, 3_600_000),
  };
}

/** A PromQL string literal: the value escaped as Prometheus reads double-quoted strings. */
function quoted(value: string): string {
  return JSON.stringify(value);
}

/** `ALERTS{alertname=~"A|B",alertstate="firing",…}`: alert names need no regex escaping (letters, digits, _ and :). */
export function alertQuery(config: Pick<AlertGateConfig, 'alerts' | 'matchLabels'>): string {
  const matchers = [`alertname=~${quoted(config.alerts.join('|'))}`, 'alertstate="firing"'];
  for (const [name, value] of Object.entries(config.matchLabels)) matchers.push(`${name}=${quoted(value)}`);
  return `ALERTS{${matchers.join(',')}}`;
}

/** Asks Prometheus whether any of the gate's alerts fires, and answers as the gate. */
export async function alertGateProgress(
  config: AlertGateConfig,
  client: PrometheusClient | undefined,
  now: Date,
  options: { signal?: AbortSignal } = {},
): Promise<GateProgress> {
  const until = new Date(now.getTime() + config.recheckMs);
  if (!client)
    return { state: 'WAITING', reason: 'cannot tell whether alerts fire: rollplane has no Prometheus configured and the gate gives no address', until };
  const watched = config.alerts.join(', ');
  let answer: Awaited<ReturnType<PrometheusClient['query']>>;
  try {
    answer = await client.query(alertQuery(config), { timeoutMs: config.timeoutMs, ...options });
  } catch (error) {
    if (!(error instanceof PrometheusError)) throw error;
    return { state: 'WAITING', reason: `cannot tell whether alerts fire (${watched}): ${error.reason}: ${error.message}`, until };
  }
  if (answer.type !== 'vector') {
    return { state: 'WAITING', reason: `cannot tell whether alerts fire (${watched}): Prometheus answered a ${answer.type}, not ALERTS series`, until };
  }
  const firing = new Map<string, number>();
  for (const sample of answer.samples) {
    const name = sample.labels.alertname ?? '(no alertname)';
    firing.set(name, (firing.get(name) ?? 0) + 1);
  }
  if (firing.size === 0) return { state: 'PASSED', reason: `no alert firing among ${watched}` };
  const names = [...firing.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => (n > 1 ? `${name} (${n} series)` : name));
  return { state: 'WAITING', reason: `alerts firing: ${names.join(', ')}`, until };
}
