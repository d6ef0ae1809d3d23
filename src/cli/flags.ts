import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { InvalidArgumentError } from 'commander';
import { isDns1123Label, isDns1123Subdomain, namesProblem, parseNamespacedName } from '../util/dnsNames.js';
import { parseImageReference } from '../util/imageReference.js';
import { isAppError } from '../errors.js';
import { normalizeMaxUnavailable, type IntRange } from '../domain/kinds/limits.js';

export { InvalidArgumentError as InvalidArgument };

/**
 * Parsers for command-line values. Each throws commander's InvalidArgumentError, which commander reports as
 * "option '--x <v>' argument 'y' is invalid. <reason>" and the CLI turns into exit code 2.
 */

export function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    if (!/^-?\d+$/.test(raw.trim())) throw new InvalidArgumentError(`Expected a whole number between ${min} and ${max}.`);
    const n = Number(raw);
    if (n < min || n > max) throw new InvalidArgumentError(`Expected a whole number between ${min} and ${max}.`);
    return n;
  };
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `600` (seconds), `90s`, `10m`, `1h30m`, `30d` → seconds. */
export function parseDurationSeconds(raw: string): number | undefined {
  const text = raw.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text);
  if (!/^(\d{1,9}[smhd])+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)([smhd])/g)) total += Number(n) * UNIT_SECONDS[unit!]!;
  return total;
}

export function duration(min: number, max: number) {
  return (raw: string): number => {
    const seconds = parseDurationSeconds(raw);
    if (seconds === undefined) throw new InvalidArgumentError('Expected seconds (600) or a duration such as 90s, 10m, 1h30m, 30d.');
    if (seconds < min || seconds > max) throw new InvalidArgumentError(`Expected between ${min} and ${max} seconds.`);
    return seconds;
  };
}

/** A count (`2`) or a percentage (`25%`) as the API's maxUnavailable takes it (the strategy contract's rule). */
export function countOrPercent(raw: string): string {
  const value = normalizeMaxUnavailable(raw);
  if (value === undefined) throw new InvalidArgumentError('Expected a positive count such as 2 or a percentage between 1% and 100% such as 25%.');
  return value;
}

/** An integer flag within a kind contract's range. */
export function intIn(range: IntRange) {
  return integer(range.min, range.max);
}

/** A duration flag within a kind contract's range (in seconds). */
export function durationIn(range: IntRange) {
  return duration(range.min, range.max);
}

export function oneOf<T extends string>(allowed: readonly T[], map: (value: T) => string = (v) => v) {
  return (raw: string): string => {
    const text = raw.trim().toLowerCase() as T;
    if (!allowed.includes(text)) throw new InvalidArgumentError(`Expected one of ${allowed.join(', ')}.`);
    return map(text);
  };
}

export function image(raw: string): string {
  try {
    parseImageReference(raw);
    return raw;
  } catch (error) {
    // The message repeats the reference and says what is wrong with it.
    if (isAppError(error)) throw new InvalidArgumentError(error.message.replace(/^image: /, ''));
    throw error;
  }
}

export function dnsLabel(raw: string): string {
  const problem = namesProblem(isDns1123Label(raw));
  if (problem) throw new InvalidArgumentError(`Expected a DNS-1123 label: ${problem}.`);
  return raw;
}

/** `a,b,c` of DNS-1123 labels (member cluster names), repeatable: the lists add up. */
export function dnsLabelList(raw: string, previous: string[] | undefined): string[] {
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0) throw new InvalidArgumentError('Expected one or more names separated by commas.');
  return [...(previous ?? []), ...names.map(dnsLabel)];
}

export function dnsSubdomain(raw: string): string {
  const problem = namesProblem(isDns1123Subdomain(raw));
  if (problem) throw new InvalidArgumentError(`Expected a DNS-1123 name: ${problem}.`);
  return raw;
}

/** `namespace/name`. */
export function namespacedName(raw: string): string {
  if (!parseNamespacedName(raw)) throw new InvalidArgumentError('Expected namespace/name (DNS-1123 names).');
  return raw;
}

/** `namespace/name` or `name` (any namespace). */
export function optionallyNamespacedName(raw: string): string {
  if (raw.includes('/')) return namespacedName(raw);
  return dnsSubdomain(raw);
}

/** A Kubernetes label selector, checked for its shape only (the server parses it fully). */
export function labelSelector(raw: string): string {
  const text = raw.trim();
  if (text.length === 0 || text.length > 1024 || /[\n\r]/.test(text)) throw new InvalidArgumentError('Expected a label selector such as env=prod,tier!=edge.');
  return text;
}

/** Free text sent to the server (reasons, messages, cause fields). */
export function text(max: number) {
  return (raw: string): string => {
    if (raw.length > max) throw new InvalidArgumentError(`At most ${max} characters.`);
    return raw;
  };
}

/** Collects a repeatable option: `--pool a/x --pool b/y` → `['a/x', 'b/y']`, each checked by `parse`. */
export function repeatable<T>(parse: (raw: string) => T) {
  return (raw: string, previous: T[] | undefined): T[] => [...(previous ?? []), parse(raw)];
}

/** `NAME=VALUE` sets an environment variable, `NAME-` removes it (as `kubectl set env`). */
export function envVar(raw: string): { name: string; value: string | null } {
  const removal = /^([A-Za-z_][A-Za-z0-9_.-]*)-$/.exec(raw);
  if (removal) return { name: removal[1]!, value: null };
  const eq = raw.indexOf('=');
  const name = eq > 0 ? raw.slice(0, eq) : '';
  if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name)) throw new InvalidArgumentError('Expected NAME=VALUE to set or NAME- to remove a variable.');
  return { name, value: raw.slice(eq + 1) };
}

export function json(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw new InvalidArgumentError('Expected a JSON document.');
  }
}

/** `--wave-strategy <file>`: a staged bump's waves (docs/waves.md), a JSON or YAML file holding a WaveStrategyInput. */
export function waveStrategyFile(raw: string): unknown {
  return mappingFile(raw, 'with `waves` (see docs/waves.md)');
}

/** `window create|update --file <file>`: a maintenance-window policy, a JSON or YAML file (docs/waves.md). */
export function policyFile(raw: string): unknown {
  return mappingFile(raw, 'with name, kind and windows (see docs/waves.md)');
}

/** `analysis-template create|update --file <file>`: an Argo Rollouts AnalysisTemplate, JSON or YAML (docs/analysis.md). */
export function analysisTemplateFile(raw: string): unknown {
  return mappingFile(raw, 'holding an AnalysisTemplate (see docs/analysis.md)');
}

/** A JSON or YAML file holding one mapping (the server checks its fields). */
function mappingFile(raw: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(raw, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(`Cannot read ${raw}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    const value: unknown = parseYaml(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a mapping');
    return value;
  } catch {
    throw new InvalidArgumentError(`Expected ${raw} to hold a JSON or YAML mapping ${what}.`);
  }
}
