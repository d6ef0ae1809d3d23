/**
 * Analysis templates: the Prometheus-provider subset of Argo Rollouts' `AnalysisTemplate` (argoproj.io/v1alpha1), as
 * JSON or YAML, with rollplane's own `noData` and `minSamples` per metric (ADR 0061). Whatever is outside the subset is
 * refused here, at submit time, with a ValidationError (BAD_USER_INPUT) naming the field path — never accepted and then
 * ignored, and never discovered mid-rollout.
 *
 * Argo's defaults and rules kept: failureLimit 0, inconclusiveLimit 0, consecutiveErrorLimit 4; one measurement when
 * neither count nor interval is given; count > 1 needs an interval; limits may not exceed count. Refused where Argo
 * accepts: an interval without count (Argo then measures until the run is stopped; a gate must end), providers other
 * than prometheus, `valueFrom` args, `measurementRetention` (rollplane keeps every measurement), `consecutiveSuccessLimit`.
 */
import { isDns1123Subdomain } from '../util/dnsNames.js';
import { checkPrometheusAddress } from './prometheusAddress.js';
import { compileNamePattern, type NamePattern } from './metricNamePattern.js';
import { parse as parseYaml } from 'yaml';
import { ValidationError } from '../errors.js';
import { type Condition, parseCondition } from './condition.js';
import { checkPromQL } from './promql.js';

/** What an empty or NaN measurement means: decided per metric, never by accident. */
export type NoDataPolicy = { kind: 'FAIL' } | { kind: 'PASS' } | { kind: 'INCONCLUSIVE' } | { kind: 'WAIT'; maxMs: number };

/**
 * Arguments rollplane resolves for each analysis run, usable as `{{args.<name>}}` without a value in the template;
 * `baselineVersion` is the version the targets not yet upgraded run (the rollout's from-version); `target` is an
 * analysis step's targets as `namespace/name` (the name alone for a cluster-scoped one), which a metric labelled
 * `namespace/name` per object needs: `namespace` and `name` alternate each apart.
 */
export const BUILT_IN_ARGS = ['version', 'cluster', 'namespace', 'name', 'target', 'wave', 'baselineVersion'] as const;
export type BuiltInArg = (typeof BUILT_IN_ARGS)[number];

export interface AnalysisMetric {
  name: string;
  /** Between the end of a measurement and the start of the next; undefined for a single measurement. */
  intervalMs: number | undefined;
  initialDelayMs: number;
  count: number;
  successCondition: Condition | undefined;
  failureCondition: Condition | undefined;
  failureLimit: number;
  inconclusiveLimit: number;
  consecutiveErrorLimit: number;
  /** Measured and recorded, never deciding the run. */
  dryRun: boolean;
  /** With `{{args.…}}` placeholders; resolved per run. */
  query: string;
  /** Prometheus base URL; undefined → the one rollplane is configured with. */
  address: string | undefined;
  timeoutMs: number;
  noData: NoDataPolicy;
  /** Fewer series than this in a vector is no data. */
  minSamples: number;
  /** rollplane's own: each measurement also compared with the same measure over the targets not yet upgraded. */
  baseline: BaselineComparison | undefined;
}

/**
 * A measurement's first value (the canary) against the baseline query's first value: bad when it moves in
 * `direction` beyond `maxRatio` times the baseline AND by more than `minDelta` — the absolute slack that keeps a
 * baseline near zero (0.001 → 0.002 is a ratio of 2) from failing on noise.
 */
export interface BaselineComparison {
  query: string;
  /** Which move is bad: `increase` (errors, latency) or `decrease` (leases served, success rate). */
  direction: 'increase' | 'decrease';
  maxRatio: number;
  minDelta: number;
  /** A failed comparison fails the metric at once, whatever its failureLimit. */
  critical: boolean;
}

export interface AnalysisTemplate {
  name: string;
  /** The document as submitted, as JSON: what a run records. */
  source: string;
  /** Declared arguments: a value, or none for a built-in one. */
  args: { name: string; value: string | undefined }[];
  metrics: AnalysisMetric[];
}

export const DEFAULT_CONSECUTIVE_ERROR_LIMIT = 4;
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Bounds of a query's timeout (Argo's `timeout`, seconds). */
export const MAX_TIMEOUT_MS = 120_000;
/** Shortest interval: measuring faster than Prometheus scrapes measures nothing new. */
export const MIN_INTERVAL_MS = 1_000;
/**
 * Bounds on one metric's run (attack 19, F5: `count: 1e9` and `interval: 99999999999h` were taken; every measurement
 * keeps its resolved query, so one analysis could grow the history by gigabytes). An analysis gate decides a step of a
 * rollout: one that measures for more than a week, or more than 10,000 times, is a monitor, not a gate.
 */
export const MAX_COUNT = 10_000;
export const MAX_DURATION_MS = 24 * 3_600_000;
export const MAX_RUN_MS = 7 * 24 * 3_600_000;
/** An argument's value, the template's or a gate's config's: each is substituted into every measurement's query. */
export const MAX_ARG_VALUE_LENGTH = 1_024;
/** Metrics one template lists at most. */
export const MAX_METRICS = 32;
/**
 * A query once its arguments are substituted (attack 23, G1–G3): a 16 KB template using a 1 KB argument 1,637 times
 * resolved to 1.68 MB, sent to Prometheus and kept per run, and a run of thousands of measurements then no longer fit
 * the service's memory when read. Twice a template query's own bound.
 */
export const MAX_RESOLVED_QUERY_LENGTH = 32_768;
/**
 * What an argument's value may not contain: what could change the query's structure, and control characters (attack
 * 24, H4: an ESC sequence reached Prometheus and, printed by `rollplane rollout gate`, rewrote another user's
 * terminal). Args name things; they are not PromQL.
 */
const UNSAFE_ARG_VALUE = /["'`\\{}\p{Cc}\u2028\u2029]/u;

/** Why an argument's value cannot be substituted into a query, or undefined when it can. */
export function unsafeArgValue(value: string): string | undefined {
  return UNSAFE_ARG_VALUE.test(value)
    ? 'contains a quote, backslash, brace or control character (argument values name things; they are not PromQL)'
    : undefined;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Argo's durations (Go's time.ParseDuration without µs/ns): `30s`, `5m`, `1h30m`, `500ms`. */
export function parseDuration(text: string, field: string): number {
  const parts = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(text) ? [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)] : [];
  if (parts.length === 0) throw new ValidationError(field, `${JSON.stringify(text)} is not a duration like 30s, 5m or 1h30m`);
  return Math.round(parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNITS[unit!]!, 0));
}

/** A duration of at most MAX_DURATION_MS. */
function boundedDuration(text: string, field: string): number {
  const ms = parseDuration(text, field);
  if (ms > MAX_DURATION_MS) throw new ValidationError(field, `must be at most ${MAX_DURATION_MS / 3_600_000}h`);
  return ms;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function only(object: Record<string, unknown>, allowed: readonly string[], path: string, why: Record<string, string> = {}): void {
  for (const key of Object.keys(object)) {
    if (allowed.includes(key)) continue;
    const field = path ? `${path}.${key}` : key;
    // Own reasons only: `why.__proto__` is Object.prototype (a YAML `__proto__:` key was refused as "[object Object]").
    const reason = Object.hasOwn(why, key) ? why[key] : undefined;
    throw new ValidationError(field, reason ?? `is not supported (rollplane accepts ${allowed.join(', ')} here)`);
  }
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  return value;
}

/** An integer ≥ min, given as a number or a numeric string (Argo's IntOrString). */
function integer(value: unknown, field: string, min: number): number {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min) throw new ValidationError(field, `must be a whole number ≥ ${min}`);
  return n;
}

export function parseNoData(value: unknown, field: string): NoDataPolicy {
  const policy = typeof value === 'string' ? value.trim() : '';
  if (policy === 'FAIL' || policy === 'PASS' || policy === 'INCONCLUSIVE') return { kind: policy };
  const wait = /^WAIT\((.+)\)$/.exec(policy);
  if (wait) return { kind: 'WAIT', maxMs: boundedDuration(wait[1]!.trim(), field) };
  throw new ValidationError(field, 'must be FAIL, PASS, INCONCLUSIVE or WAIT(<duration>), e.g. WAIT(2m)');
}

const PLACEHOLDER = /\{\{\s*args\.([A-Za-z0-9_-]+)\s*\}\}/g;

function placeholders(value: string): string[] {
  return [...value.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** Reads a template given as JSON or YAML text, or as an already-parsed object. */
/**
 * `values`: arguments the caller gives for this use of the template (a gate's `config.args`, or a run's recorded
 * arguments when it is read again): an argument the template declares without a value is accepted when it is among
 * them, as Argo takes a Rollout's args for a template's unvalued ones (attack 19, F3: it was refused though given).
 */
export function parseAnalysisTemplate(input: string | unknown, values: Readonly<Record<string, string>> = {}): AnalysisTemplate {
  let document: unknown = input;
  if (typeof input === 'string') {
    try {
      document = parseYaml(input, { maxAliasCount: 0 }); // YAML is a superset of JSON: one reader for both
    } catch (error) {
      throw new ValidationError('template', `is neither JSON nor YAML: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  if (!isObject(document)) throw new ValidationError('template', 'must be an AnalysisTemplate object');
  let spec: unknown = document;
  let name = '';
  let specPath = '';
  if ('kind' in document || 'apiVersion' in document || 'spec' in document) {
    only(document, ['apiVersion', 'kind', 'metadata', 'spec'], '');
    if (document.apiVersion !== 'argoproj.io/v1alpha1') throw new ValidationError('apiVersion', 'must be argoproj.io/v1alpha1');
    if (document.kind !== 'AnalysisTemplate' && document.kind !== 'ClusterAnalysisTemplate')
      throw new ValidationError('kind', 'must be AnalysisTemplate or ClusterAnalysisTemplate');
    const metadata = document.metadata;
    if (metadata !== undefined && !isObject(metadata)) throw new ValidationError('metadata', 'must be an object');
    if (metadata?.name !== undefined) {
      name = text(metadata.name, 'metadata.name');
      // A Kubernetes object's name, as Argo's is: it labels rollplane_analysis_* series (attack 19, F9: any text was).
      const problems = isDns1123Subdomain(name);
      if (problems.length > 0) throw new ValidationError('metadata.name', problems.join('; '));
    }
    spec = document.spec;
    specPath = 'spec';
  }
  const at = (field: string) => (specPath ? `${specPath}.${field}` : field);
  if (!isObject(spec)) throw new ValidationError(specPath || 'template', 'must be an object with metrics');
  only(spec, ['args', 'metrics', 'dryRun'], specPath, {
    measurementRetention: 'is not supported: rollplane keeps every measurement',
  });

  const args = parseArgs(spec.args, at('args'), values);
  const dryRunPatterns = parseDryRun(spec.dryRun, at('dryRun'));
  if (!Array.isArray(spec.metrics) || spec.metrics.length === 0) throw new ValidationError(at('metrics'), 'must list at least one metric');
  if (spec.metrics.length > MAX_METRICS) throw new ValidationError(at('metrics'), `lists more than ${MAX_METRICS} metrics`);
  const declared = new Set(args.map((a) => a.name));
  const metrics = spec.metrics.map((metric, i) => parseMetric(metric, at(`metrics[${i}]`), declared, dryRunPatterns));
  const names = new Set<string>();
  for (const [i, metric] of metrics.entries()) {
    if (names.has(metric.name)) throw new ValidationError(at(`metrics[${i}].name`), `${JSON.stringify(metric.name)} is used twice`);
    names.add(metric.name);
  }
  // Refused when submitted if the arguments known now already make a query too long (attack 23, G1–G3).
  for (const [i, metric] of metrics.entries()) {
    const queries = [
      [metric.query, `metrics[${i}].provider.prometheus.query`],
      ...(metric.baseline ? [[metric.baseline.query, `metrics[${i}].baseline.query`]] : []),
    ] as const;
    for (const [query, field] of queries) {
      const length = resolvedLengthAtLeast(query, args, values);
      if (length > MAX_RESOLVED_QUERY_LENGTH) {
        throw new ValidationError(at(field), `resolves to ${length} characters with the arguments given, more than ${MAX_RESOLVED_QUERY_LENGTH}`);
      }
    }
  }
  return { name, source: JSON.stringify(document), args, metrics };
}

function parseArgs(value: unknown, path: string, supplied: Readonly<Record<string, string>>): AnalysisTemplate['args'] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ValidationError(path, 'must be a list of {name, value}');
  // Names twice are named as such before anything else (attack 23, G6: the copy without a value was said to have none).
  const names = new Set<string>();
  for (const [i, arg] of value.entries()) {
    const name = isObject(arg) && typeof arg.name === 'string' ? arg.name : undefined;
    if (name === undefined) continue;
    if (names.has(name)) throw new ValidationError(`${path}[${i}].name`, `${JSON.stringify(name)} is declared twice`);
    names.add(name);
  }
  const seen = new Set<string>();
  return value.map((arg, i) => {
    const field = `${path}[${i}]`;
    if (!isObject(arg)) throw new ValidationError(field, 'must be {name, value}');
    only(arg, ['name', 'value'], field, {
      valueFrom: `is not supported: give the value, or use a built-in argument (${BUILT_IN_ARGS.join(', ')})`,
    });
    const name = text(arg.name, `${field}.name`);
    if (!/^[A-Za-z0-9_-]{1,63}$/.test(name)) throw new ValidationError(`${field}.name`, 'must be 1-63 letters, digits, - or _');
    // An object's own machinery, not a name: `__proto__` was substituted into the query but lost from the run's record.
    if (name === '__proto__') throw new ValidationError(`${field}.name`, '"__proto__" cannot name an argument');
    if (seen.has(name)) throw new ValidationError(`${field}.name`, `${JSON.stringify(name)} is declared twice`);
    seen.add(name);
    const builtIn = (BUILT_IN_ARGS as readonly string[]).includes(name);
    if (arg.value === undefined) {
      if (!builtIn && !Object.hasOwn(supplied, name))
        throw new ValidationError(
          `${field}.value`,
          `argument ${JSON.stringify(name)} has no value (only ${BUILT_IN_ARGS.join(', ')} are resolved by rollplane; a gate's config.args may give it)`,
        );
      return { name, value: undefined };
    }
    if (builtIn) throw new ValidationError(`${field}.value`, `argument ${JSON.stringify(name)} is resolved by rollplane for each run: give it no value`);
    const given = text(arg.value, `${field}.value`);
    if (given.length > MAX_ARG_VALUE_LENGTH) throw new ValidationError(`${field}.value`, `is longer than ${MAX_ARG_VALUE_LENGTH} characters`);
    // Refused when given, not at the first measurement after the first step moved (attack 23, G4).
    const unsafe = unsafeArgValue(given);
    if (unsafe) throw new ValidationError(`${field}.value`, unsafe);
    return { name, value: given };
  });
}

/** Argo's `spec.dryRun: [{metricName: <regex>}]`, in the part of the syntax matched in linear time (metricNamePattern.ts). */
function parseDryRun(value: unknown, path: string): NamePattern[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ValidationError(path, 'must be a list of {metricName}');
  return value.map((entry, i) => {
    const field = `${path}[${i}]`;
    if (!isObject(entry)) throw new ValidationError(field, 'must be {metricName}');
    only(entry, ['metricName'], field);
    const pattern = text(entry.metricName, `${field}.metricName`);
    if (pattern.length > 256) throw new ValidationError(`${field}.metricName`, 'is longer than 256 characters');
    const compiled = compileNamePattern(pattern);
    if (typeof compiled === 'string') throw new ValidationError(`${field}.metricName`, compiled);
    return compiled;
  });
}

const METRIC_FIELDS = [
  'name',
  'interval',
  'initialDelay',
  'count',
  'successCondition',
  'failureCondition',
  'failureLimit',
  'inconclusiveLimit',
  'consecutiveErrorLimit',
  'dryRun',
  'provider',
  'noData',
  'minSamples',
  'baseline',
] as const;

function parseMetric(value: unknown, path: string, declared: Set<string>, dryRunPatterns: NamePattern[]): AnalysisMetric {
  if (!isObject(value)) throw new ValidationError(path, 'must be an object');
  only(value, METRIC_FIELDS, path, {
    consecutiveSuccessLimit: 'is not supported (count and failureLimit decide)',
  });
  const name = text(value.name, `${path}.name`);
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(name))
    throw new ValidationError(`${path}.name`, 'must be 1-63 letters, digits, -, _ or . (a letter or digit first)');
  const intervalMs = value.interval === undefined ? undefined : boundedDuration(text(value.interval, `${path}.interval`), `${path}.interval`);
  if (intervalMs !== undefined && intervalMs < MIN_INTERVAL_MS) throw new ValidationError(`${path}.interval`, `must be at least ${MIN_INTERVAL_MS / 1000}s`);
  const initialDelayMs = value.initialDelay === undefined ? 0 : boundedDuration(text(value.initialDelay, `${path}.initialDelay`), `${path}.initialDelay`);
  let count = 1;
  if (value.count !== undefined) count = integer(value.count, `${path}.count`, 1);
  else if (intervalMs !== undefined)
    throw new ValidationError(`${path}.count`, 'is required with an interval: an analysis gate must end (Argo would measure until stopped)');
  if (count > MAX_COUNT) throw new ValidationError(`${path}.count`, `must be at most ${MAX_COUNT}: an analysis gate decides; one that never ends is a monitor`);
  if (initialDelayMs + count * (intervalMs ?? 0) > MAX_RUN_MS) {
    throw new ValidationError(`${path}.count`, `with the interval and initialDelay, the metric would measure for more than ${MAX_RUN_MS / 86_400_000} days`);
  }
  if (count > 1 && intervalMs === undefined) throw new ValidationError(`${path}.interval`, 'is required when count is more than 1');
  const failureLimit = value.failureLimit === undefined ? 0 : integer(value.failureLimit, `${path}.failureLimit`, 0);
  const inconclusiveLimit = value.inconclusiveLimit === undefined ? 0 : integer(value.inconclusiveLimit, `${path}.inconclusiveLimit`, 0);
  if (failureLimit > count) throw new ValidationError(`${path}.failureLimit`, `is more than count (${count}): the metric could never fail`);
  if (inconclusiveLimit > count)
    throw new ValidationError(`${path}.inconclusiveLimit`, `is more than count (${count}): the metric could never be inconclusive`);
  const consecutiveErrorLimit =
    value.consecutiveErrorLimit === undefined ? DEFAULT_CONSECUTIVE_ERROR_LIMIT : integer(value.consecutiveErrorLimit, `${path}.consecutiveErrorLimit`, 0);
  if (consecutiveErrorLimit > MAX_COUNT) throw new ValidationError(`${path}.consecutiveErrorLimit`, `must be at most ${MAX_COUNT}`);
  if (value.dryRun !== undefined && typeof value.dryRun !== 'boolean') throw new ValidationError(`${path}.dryRun`, 'must be true or false');
  const dryRun = value.dryRun === true || dryRunPatterns.some((re) => re.test(name));
  const successCondition =
    value.successCondition === undefined ? undefined : parseCondition(text(value.successCondition, `${path}.successCondition`), `${path}.successCondition`);
  const failureCondition =
    value.failureCondition === undefined ? undefined : parseCondition(text(value.failureCondition, `${path}.failureCondition`), `${path}.failureCondition`);
  const noData = value.noData === undefined ? ({ kind: 'INCONCLUSIVE' } as const) : parseNoData(value.noData, `${path}.noData`);
  const minSamples = value.minSamples === undefined ? 1 : integer(value.minSamples, `${path}.minSamples`, 1);

  const providerPath = `${path}.provider`;
  if (!isObject(value.provider)) throw new ValidationError(providerPath, 'must be {prometheus: {query}}');
  const providers = Object.keys(value.provider);
  const other = providers.find((p) => p !== 'prometheus');
  if (other) throw new ValidationError(`${providerPath}.${other}`, 'is not a supported provider: rollplane measures with prometheus only');
  const prometheus = value.provider.prometheus;
  if (!isObject(prometheus)) throw new ValidationError(`${providerPath}.prometheus`, 'must be {query, address?, timeout?}');
  only(prometheus, ['query', 'address', 'timeout'], `${providerPath}.prometheus`);
  const queryPath = `${providerPath}.prometheus.query`;
  const query = text(prometheus.query, queryPath);
  checkPromQL(query, queryPath);
  let address: string | undefined;
  if (prometheus.address !== undefined) {
    address = checkPrometheusAddress(text(prometheus.address, `${providerPath}.prometheus.address`), `${providerPath}.prometheus.address`, PLACEHOLDER);
  }
  const timeoutMs = prometheus.timeout === undefined ? DEFAULT_TIMEOUT_MS : integer(prometheus.timeout, `${providerPath}.prometheus.timeout`, 1) * 1000;
  if (timeoutMs > MAX_TIMEOUT_MS) throw new ValidationError(`${providerPath}.prometheus.timeout`, `must be at most ${MAX_TIMEOUT_MS / 1000} (seconds)`);
  checkPlaceholders(query, queryPath, declared);
  checkPlaceholders(address ?? '', `${providerPath}.prometheus.address`, declared);
  const baseline = value.baseline === undefined ? undefined : parseBaseline(value.baseline, `${path}.baseline`, declared);
  return {
    name,
    intervalMs,
    initialDelayMs,
    count,
    successCondition,
    failureCondition,
    failureLimit,
    inconclusiveLimit,
    consecutiveErrorLimit,
    dryRun,
    query,
    address,
    timeoutMs,
    noData,
    minSamples,
    baseline,
  };
}

function checkPlaceholders(value: string, field: string, declared: Set<string>): void {
  const unknown = placeholders(value).find((arg) => !declared.has(arg) && !(BUILT_IN_ARGS as readonly string[]).includes(arg));
  if (unknown) throw new ValidationError(field, `uses {{args.${unknown}}}, which the template does not declare`);
}

function parseBaseline(value: unknown, path: string, declared: Set<string>): BaselineComparison {
  if (!isObject(value)) throw new ValidationError(path, 'must be {query, direction, maxRatio, minDelta?, critical?}');
  only(value, ['query', 'direction', 'maxRatio', 'minDelta', 'critical'], path);
  const query = text(value.query, `${path}.query`);
  checkPromQL(query, `${path}.query`);
  checkPlaceholders(query, `${path}.query`, declared);
  const direction = value.direction ?? 'increase';
  if (direction !== 'increase' && direction !== 'decrease')
    throw new ValidationError(`${path}.direction`, 'must be increase or decrease (the move that is bad)');
  const positive = (v: unknown, field: string, min: number, strict: boolean) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || (strict ? v <= min : v < min))
      throw new ValidationError(field, `must be a number ${strict ? '>' : '≥'} ${min}`);
    return v;
  };
  const maxRatio = positive(value.maxRatio, `${path}.maxRatio`, 0, true);
  const minDelta = value.minDelta === undefined ? 0 : positive(value.minDelta, `${path}.minDelta`, 0, false);
  if (value.critical !== undefined && typeof value.critical !== 'boolean') throw new ValidationError(`${path}.critical`, 'must be true or false');
  return { query, direction, maxRatio, minDelta, critical: value.critical === true };
}

/** The values of a run's arguments: the built-ins rollplane resolves, the template's own for the rest. */
export type ResolvedArgs = Partial<Record<BuiltInArg, string>> & Record<string, string | undefined>;

/**
 * Replaces `{{args.name}}` in `value`. A value that could change the query's structure (quotes, backslashes, braces,
 * newlines) is refused: args name things (versions, namespaces, clusters), they are not PromQL.
 */
export function resolveArgs(value: string, template: AnalysisTemplate, args: ResolvedArgs): string {
  const own = new Map(template.args.filter((a) => a.value !== undefined).map((a) => [a.name, a.value!]));
  let length = value.length;
  return value.replace(PLACEHOLDER, (placeholder: string, name: string) => {
    // The run's value first: a gate's `config.args` overrides the template's own (attack 19, F3: it was checked, then
    // ignored), as it overrides a built-in's.
    const resolved = (Object.hasOwn(args, name) ? args[name] : undefined) ?? own.get(name);
    if (resolved === undefined) throw new Error(`{{args.${name}}} has no value for this run`);
    if (unsafeArgValue(resolved)) throw new Error(`{{args.${name}}} = ${JSON.stringify(resolved)} contains a quote, backslash, brace or control character`);
    // Counted before the text is built: the bound holds for the memory it takes too.
    length += resolved.length - placeholder.length;
    if (length > MAX_RESOLVED_QUERY_LENGTH) {
      throw new Error(
        `the query resolves to more than ${MAX_RESOLVED_QUERY_LENGTH} characters with this run's values (at {{args.${name}}}, ${resolved.length} long)`,
      );
    }
    return resolved;
  });
}

/**
 * The length `value` resolves to with `args` over the template's own values, the arguments rollplane resolves per run
 * (and any other without a value yet) counted as empty: a lower bound, known when the analysis is submitted, and the
 * same for every run of it (so a run's own parse never refuses what its submit accepted).
 */
function resolvedLengthAtLeast(value: string, templateArgs: AnalysisTemplate['args'], args: Readonly<Record<string, string>>): number {
  const own = new Map(templateArgs.filter((a) => a.value !== undefined).map((a) => [a.name, a.value!]));
  let length = value.length;
  for (const match of value.matchAll(PLACEHOLDER)) {
    const name = match[1]!;
    // The built-ins' values come with each run (a step's targets may be long): the same template always passes here.
    if ((BUILT_IN_ARGS as readonly string[]).includes(name)) {
      length -= match[0].length;
      continue;
    }
    const resolved = (Object.hasOwn(args, name) ? args[name] : undefined) ?? own.get(name) ?? '';
    length += resolved.length - match[0].length;
  }
  return length;
}
