import { ValidationError } from '../../errors.js';
import { isDns1123Label, namesProblem } from '../../util/dnsNames.js';
import { matchesLabelSelector, parseLabelSelector, type Requirement } from '../labelSelector.js';
import { parseDuration } from '../gates/maintenanceWindows.js';

/**
 * Ordered waves over member clusters (issue 30): each wave picks clusters by names and/or a label selector, in an
 * order (a label's value, then the name), and bounds how many of them change at once and how many may fail. The plan
 * is made once, when a run starts, and frozen: labels changed later move no cluster. A cluster two waves pick goes to
 * the first; clusters no wave picks go to a last wave named `remainder` (the default) or are listed as excluded —
 * never silently dropped (rancher/fleet#3828).
 */
export type Remainder = 'LAST_WAVE' | 'EXCLUDE';

/** A count as given: a whole number, or a percentage of the wave's clusters (`25%`). */
export type CountInput = number | string;

export interface WaveInput {
  name: string;
  clusters?: readonly string[] | null;
  clusterSelector?: string | null;
  /** A label whose value orders the wave's clusters (then the name); by name when omitted or absent on a cluster. */
  sortByLabel?: string | null;
  /** Clusters changing at once: a number, or a percentage of the wave rounded down, at least 1. Default 1. */
  maxConcurrency?: CountInput | null;
  /** Failed clusters the wave tolerates: a number or a percentage rounded down. Default 0. */
  maxFailures?: CountInput | null;
  /** Soak after the wave succeeded, before the next starts (`30m`). */
  minSuccessTime?: string | null;
  /** Any failure in this wave ends the run whatever maxFailures says. */
  mandatory?: boolean | null;
}

export interface PlannedWave {
  readonly name: string;
  /** In the order they are taken. */
  readonly clusters: readonly string[];
  readonly maxConcurrency: number;
  readonly maxFailures: number;
  readonly minSuccessMs: number;
  readonly mandatory: boolean;
  /** True for the wave made of the clusters no wave picked. */
  readonly remainder: boolean;
}

export interface WavePlan {
  readonly waves: readonly PlannedWave[];
  /** Clusters no wave picked, when the remainder policy is EXCLUDE. */
  readonly excluded: readonly string[];
}

export const REMAINDER_WAVE = 'remainder';
/** The most waves a strategy names (a remainder wave may come after them). */
export const MAX_WAVES = 50;

/** The frozen plan of `waves` over the registered clusters (those of the run's cluster selection). */
export function planWaves(
  inputs: readonly WaveInput[],
  clusters: readonly { name: string; labels: Record<string, string> }[],
  remainder: Remainder = 'LAST_WAVE',
  field = 'input.waves',
): WavePlan {
  if (inputs.length === 0) throw new ValidationError(field, 'names no wave');
  if (inputs.length > MAX_WAVES) throw new ValidationError(field, `at most ${MAX_WAVES} waves`);
  const known = new Map(clusters.map((c) => [c.name, c]));
  const taken = new Set<string>();
  const names = new Set<string>();
  const waves: PlannedWave[] = [];
  inputs.forEach((input, i) => {
    const at = `${field}[${i}]`;
    const nameProblem = namesProblem(isDns1123Label(String(input.name ?? '')));
    if (nameProblem) throw new ValidationError(`${at}.name`, nameProblem);
    if (input.name === REMAINDER_WAVE) throw new ValidationError(`${at}.name`, `"${REMAINDER_WAVE}" names the wave of the clusters no wave picks`);
    if (names.has(input.name)) throw new ValidationError(`${at}.name`, `"${input.name}" is used by an earlier wave`);
    names.add(input.name);
    const picked = pick(input, known, clusters, at).filter((c) => !taken.has(c.name));
    for (const cluster of picked) taken.add(cluster.name);
    waves.push(wave(input.name, sorted(picked, input.sortByLabel), input, at, false));
  });
  const rest = clusters.filter((c) => !taken.has(c.name));
  if (remainder === 'EXCLUDE' || rest.length === 0) return { waves, excluded: remainder === 'EXCLUDE' ? rest.map((c) => c.name).sort() : [] };
  return { waves: [...waves, wave(REMAINDER_WAVE, sorted(rest, null), {}, `${field}.remainder`, true)], excluded: [] };
}

function pick(
  input: WaveInput,
  known: ReadonlyMap<string, { name: string; labels: Record<string, string> }>,
  clusters: readonly { name: string; labels: Record<string, string> }[],
  at: string,
): { name: string; labels: Record<string, string> }[] {
  const byName = input.clusters ?? [];
  const selector = input.clusterSelector?.trim() ?? '';
  if (byName.length === 0 && selector === '') throw new ValidationError(at, 'picks no cluster: give clusters and/or clusterSelector');
  const picked = new Map<string, { name: string; labels: Record<string, string> }>();
  byName.forEach((name, j) => {
    const cluster = known.get(name);
    if (!cluster) throw new ValidationError(`${at}.clusters[${j}]`, `no member cluster named "${String(name).slice(0, 63)}" is in the run`);
    picked.set(name, cluster);
  });
  if (selector !== '') {
    const requirements: Requirement[] = parseLabelSelector(selector, `${at}.clusterSelector`);
    for (const cluster of clusters) if (matchesLabelSelector(requirements, cluster.labels)) picked.set(cluster.name, cluster);
  }
  return [...picked.values()];
}

function sorted(clusters: readonly { name: string; labels: Record<string, string> }[], label: string | null | undefined): string[] {
  const keyOf = (c: { name: string; labels: Record<string, string> }) => (label ? (c.labels[label] ?? null) : null);
  return [...clusters]
    .sort((a, b) => {
      const [ka, kb] = [keyOf(a), keyOf(b)];
      if (ka !== kb) return ka === null ? 1 : kb === null ? -1 : ka.localeCompare(kb, 'en', { numeric: true });
      return a.name.localeCompare(b.name);
    })
    .map((c) => c.name);
}

function wave(name: string, clusters: string[], input: Omit<WaveInput, 'name'>, at: string, remainder: boolean): PlannedWave {
  return {
    name,
    clusters,
    maxConcurrency: Math.max(1, count(input.maxConcurrency ?? 1, clusters.length, `${at}.maxConcurrency`)),
    maxFailures: count(input.maxFailures ?? 0, clusters.length, `${at}.maxFailures`),
    minSuccessMs: input.minSuccessTime ? parseDuration(input.minSuccessTime, `${at}.minSuccessTime`) : 0,
    mandatory: input.mandatory ?? false,
    remainder,
  };
}

/** A whole number as given, or a percentage of `of` rounded down. */
export function count(value: CountInput, of: number, field: string): number {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0) throw new ValidationError(field, 'must be a whole number ≥ 0 or a percentage ("25%")');
    return value;
  }
  const match = /^(\d{1,3})%$/.exec(value);
  if (!match || Number(match[1]) > 100)
    throw new ValidationError(field, `"${String(value).slice(0, 20)}" is not a whole number ≥ 0 or a percentage from 0% to 100%`);
  return Math.floor((Number(match[1]) * of) / 100);
}
