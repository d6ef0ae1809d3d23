import type { DocumentNode, OperationDefinitionNode } from 'graphql';
import type { WriteGeneration } from '../store/writeGeneration.js';
import { rootFieldsOf } from './operationFields.js';

/**
 * Answers to history queries, kept and served again until the history changes (docs/adr/0026-response-cache.md).
 *
 * A dashboard, a wall of screens and CI jobs polling `rollout(id)` ask the same questions far more often than the
 * history changes; each answer costs a rollouts page, its progress counts and the serialization of a few hundred
 * fields. An entry is valid for exactly one write generation (store/writeGeneration.ts): the generation is read
 * before the query runs, and the entry is served only while the generation is still that one. So an answer is never
 * served after a commit it could not see (PostgreSQL: after the commit's announcement has arrived, within
 * milliseconds), and an answer whose reads straddled a commit is never served at all.
 *
 * What may be kept:
 * - queries whose root fields are all read from the history store alone ({@link HISTORY_ROOT_FIELDS}: nothing below
 *   them reads the clock, the informers' caches or the engine's memory). Everything else (the Kubernetes views,
 *   work queues, tokens, the audit log) is answered afresh every time;
 * - answers without errors;
 * - per role: the same document and variables may be answered differently to another role.
 *
 * Everything before execution still runs for every request: authentication, validation, the role checks, the cost
 * and rate limits, the metrics. Only the execution and the serialization are saved.
 */

/** Root fields whose answers (and everything below them) depend on the history store's rows and nothing else. */
export const HISTORY_ROOT_FIELDS: ReadonlySet<string> = new Set(['rollouts', 'rollout', 'events', 'clusterUpgradeDurations']);

/** Longer variables are not worth a key (no UI or CLI document comes near; keys stay small). */
const MAX_VARIABLES_CHARS = 2_048;

/** One answer at most this share of the budget: a few huge pages must not evict everything else. */
const MAX_ENTRY_SHARE = 8;

interface Entry {
  generation: string;
  data: Record<string, unknown>;
  bytes: number;
}

export interface CachedAnswer {
  data: Record<string, unknown>;
}

export class ResponseCache {
  /** By key, least recently used first (a hit moves its entry to the end). */
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** The serialized `data` of every kept answer, so that a hit is not serialized again (see `serialized`). */
  private readonly jsonOf = new WeakMap<object, string>();
  private readonly verdicts = new WeakMap<OperationDefinitionNode, boolean>();

  constructor(
    private readonly generation: WriteGeneration,
    private readonly budgetBytes: number,
  ) {}

  /** Whether answers to `operation` may be kept (decided once per parsed operation). */
  cacheable(document: DocumentNode, operation: OperationDefinitionNode): boolean {
    let verdict = this.verdicts.get(operation);
    if (verdict === undefined) {
      const fields = operation.operation === 'query' ? rootFieldsOf(document, operation) : [];
      verdict = fields.length > 0 && fields.every((field) => HISTORY_ROOT_FIELDS.has(field));
      this.verdicts.set(operation, verdict);
    }
    return verdict;
  }

  /** The key of one question; undefined when it is not worth keeping. */
  keyOf(queryHash: string, operationName: string | undefined, role: string, variables: Record<string, unknown> | undefined): string | undefined {
    const json = variables ? JSON.stringify(variables) : '';
    if (json.length > MAX_VARIABLES_CHARS) return undefined;
    // The first part is a JSON array, so it ends where it ends: no operation name can run into the role.
    return `${JSON.stringify([queryHash, operationName ?? null, role])}${json}`;
  }

  /** The generation to hand to `keep` with an answer read from now on; null: nothing may be kept or served. */
  generationNow(): string | null {
    return this.generation.current();
  }

  /** The kept answer to `key`, when the history has not changed since it was read. */
  lookup(key: string, generation: string | null): CachedAnswer | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.generation !== generation) {
      this.bytes -= entry.bytes;
      return undefined;
    }
    this.entries.set(key, entry);
    return { data: entry.data };
  }

  /** Keeps `data`, the answer to `key` read entirely after `generationNow()` returned `generation`. */
  keep(key: string, generation: string, data: Record<string, unknown>): void {
    const json = JSON.stringify(data);
    const bytes = json.length + key.length;
    if (bytes > this.budgetBytes / MAX_ENTRY_SHARE) return;
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.bytes -= previous.bytes;
    }
    for (const [oldest, entry] of this.entries) {
      if (this.bytes + bytes <= this.budgetBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
    this.entries.set(key, { generation, data, bytes });
    this.bytes += bytes;
    this.jsonOf.set(data, json);
  }

  /**
   * The response body for `result` when its data is a kept answer's: exactly what `JSON.stringify(result)` would give
   * (Apollo hands over `{ errors, data, extensions }`, the first and last undefined), without serializing it again.
   */
  serialized(result: { data?: unknown; errors?: unknown; extensions?: unknown }): string | undefined {
    if (result.errors !== undefined || result.extensions !== undefined || typeof result.data !== 'object' || result.data === null) return undefined;
    const json = this.jsonOf.get(result.data);
    return json === undefined ? undefined : `{"data":${json}}`;
  }

  /** Kept answers and their size, for the metrics. */
  size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
