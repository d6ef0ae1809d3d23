import { ConflictError, ValidationError } from '../../errors.js';
import { isDns1123Label, isLabelKey, isLabelValue, namesProblem } from '../../util/dnsNames.js';
import type { MemberClusterStore } from './MemberClusterStore.js';
import { type ClusterHealth, type ClusterRegistration, type ClusterSource, LOCAL_CLUSTER, type MemberClusterRecord } from './model.js';

/** Labels one member cluster may carry: they are matched by every cluster selection, so they stay few. */
export const MAX_CLUSTER_LABELS = 64;

/** Throws a ValidationError (BAD_USER_INPUT) naming `field` when `name` is not a DNS-1123 label. */
export function validateClusterName(name: string, field = 'name'): void {
  const problem = namesProblem(isDns1123Label(name));
  if (problem) throw new ValidationError(field, `"${name}" is not a valid member cluster name: ${problem}`);
}

/** Throws a ValidationError naming `field` when a key or value is not a Kubernetes label key or value. */
export function validateClusterLabels(labels: Record<string, string>, field = 'labels'): void {
  const entries = Object.entries(labels);
  if (entries.length > MAX_CLUSTER_LABELS) throw new ValidationError(field, `at most ${MAX_CLUSTER_LABELS} labels (got ${entries.length})`);
  for (const [key, value] of entries) {
    const keyProblem = namesProblem(isLabelKey(key));
    if (keyProblem) throw new ValidationError(field, `label key "${key}": ${keyProblem}`);
    if (typeof value !== 'string') throw new ValidationError(field, `label "${key}": the value must be a string`);
    const valueProblem = namesProblem(isLabelValue(value));
    if (valueProblem) throw new ValidationError(field, `label "${key}" value "${value}": ${valueProblem}`);
  }
}

/** A registration that a source could not make, and why (never a credential: the reason names the source's object). */
export interface RefusedRegistration {
  sourceRef: string;
  name: string;
  reason: string;
}

export interface SyncReport {
  created: string[];
  updated: string[];
  removed: string[];
  refused: RefusedRegistration[];
}

/**
 * The registry of member clusters (docs/adr/0048-member-clusters.md) over its store port: `local` registered at start
 * and never removed; every other cluster owned by the source that registered it, which alone changes or removes it.
 */
export class MemberClusterRegistry {
  constructor(
    private readonly store: MemberClusterStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Registers `local` unless it is: idempotent, and labels given to it later are kept. */
  ensureLocal(): Promise<boolean> {
    return this.store.putIfAbsent({ name: LOCAL_CLUSTER, labels: {}, source: 'LOCAL', sourceRef: '' }, this.now());
  }

  /** Sets `local`'s labels (checked by the caller): they live in its row, since it has no source (ADR 0056). */
  async relabelLocal(labels: Record<string, string>): Promise<void> {
    await this.store.put({ name: LOCAL_CLUSTER, labels, source: 'LOCAL', sourceRef: '' }, this.now());
  }

  list(): Promise<MemberClusterRecord[]> {
    return this.store.list();
  }

  find(name: string): Promise<MemberClusterRecord | undefined> {
    return this.store.find(name);
  }

  /** Checks a registration as a source makes it: a DNS-1123 name other than `local`, Kubernetes labels. */
  static validate(registration: ClusterRegistration): void {
    validateClusterName(registration.name);
    if (registration.name === LOCAL_CLUSTER) {
      throw new ConflictError(`"${LOCAL_CLUSTER}" is the cluster rollplane runs against; it is registered by rollplane itself`);
    }
    validateClusterLabels(registration.labels);
  }

  /**
   * Makes `source`'s rows what it found now: registers or relabels each of `found` (one whose name or labels are
   * invalid, or whose name another source holds, is refused with the reason and changes nothing) and removes the rows
   * of `source` it no longer found. Names `found` twice: the first one counts, the others are refused.
   */
  async sync(source: ClusterSource, found: readonly ClusterRegistration[]): Promise<SyncReport> {
    const report: SyncReport = { created: [], updated: [], removed: [], refused: [] };
    const kept = new Set<string>();
    for (const registration of found) {
      const refuse = (reason: string) => report.refused.push({ sourceRef: registration.sourceRef, name: registration.name, reason });
      if (registration.source !== source) {
        refuse(`registered by ${registration.source}, not ${source}`);
        continue;
      }
      try {
        MemberClusterRegistry.validate(registration);
      } catch (error) {
        refuse((error as Error).message);
        // Bad input changes nothing: a row this source registered before stays as it was, connected.
        kept.add(registration.name);
        continue;
      }
      if (kept.has(registration.name)) {
        refuse(`the name "${registration.name}" is given by another ${source} registration already`);
        continue;
      }
      const put = await this.store.put(registration, this.now());
      if (put.outcome === 'taken') {
        refuse(`the name "${registration.name}" is registered by ${put.record.source} (${put.record.sourceRef || 'rollplane'})`);
        continue;
      }
      kept.add(registration.name);
      if (put.outcome === 'created') report.created.push(registration.name);
      if (put.outcome === 'updated') report.updated.push(registration.name);
    }
    for (const record of await this.store.list()) {
      if (record.source === source && !kept.has(record.name) && (await this.store.remove(record.name, source))) report.removed.push(record.name);
    }
    return report;
  }

  recordHealth(name: string, health: ClusterHealth, onlyIf?: ClusterHealth['state']): Promise<boolean> {
    return this.store.recordHealth(name, health, onlyIf);
  }
}
