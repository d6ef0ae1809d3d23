import type { DocumentNode, OperationDefinitionNode } from 'graphql';
import type { WriteGeneration } from '../store/writeGeneration.js';
import type { KindApi } from './kindApi.js';
import { rootFieldNodesOf, rootFieldsOf } from './operationFields.js';

/**
 * Answers to history and cluster-view queries, kept and served again until what they were read from changes
 * (docs/adr/0026-response-cache.md).
 *
 * A dashboard, a wall of screens and CI jobs polling `rollout(id)` ask the same questions far more often than the
 * answers change; each answer costs a page read, its progress counts and the serialization of a few hundred fields.
 * An entry is valid for exactly one generation of its source (store/writeGeneration.ts): the generation is read
 * before the query runs, and the entry is served only while the generation is still that one. So an answer is never
 * served after a change it could not see (PostgreSQL: after the commit's announcement has arrived, within
 * milliseconds), and an answer whose reads straddled a change is never served at all.
 *
 * What may be kept:
 * - queries whose root fields all read the history store and nothing else (`CachedRootFields.history`), or the
 *   history and the informers' caches and nothing else (`CachedRootFields.cluster`: nothing below them reads the
 *   clock, the Kubernetes API or the engine's memory); the shared ones are below, each kind names its own
 *   (`KindApi.cachedRootFields`, ADR 0051). Everything else (work queues, tokens, the audit log,
 *   `serverInfo`, the views not listed) is answered afresh every time, and so is a query that mixes them;
 * - answers without errors;
 * - per role: the same document and variables may be answered differently to another role.
 *
 * Everything before execution still runs for every request: authentication, validation, the role checks, the cost
 * and rate limits, the metrics. Only the execution and the serialization are saved.
 */

/**
 * Root fields whose answers may be kept, by what they (and everything below them) are read from: `history`, the
 * history store's rows and nothing else; `cluster`, the informers' caches and the history store and nothing else.
 */
export interface CachedRootFields {
  readonly history?: readonly string[];
  readonly cluster?: readonly string[];
}

/**
 * The shared root fields whose answers may be kept: the rollouts and the events (the history), and drift (every kind's
 * caches through its port, and the store's events).
 */
const SHARED_CACHED_ROOT_FIELDS: CachedRootFields = { history: ['rollouts', 'rollout', 'events'], cluster: ['drift'] };

/** The shared cached root fields with the registered kinds' (`KindApi.cachedRootFields`). */
export function cachedRootFieldsOf(kinds: readonly Pick<KindApi, 'cachedRootFields'>[]): Required<CachedRootFields> {
  const all = [SHARED_CACHED_ROOT_FIELDS, ...kinds.map((kind) => kind.cachedRootFields ?? {})];
  return { history: all.flatMap((fields) => fields.history ?? []), cluster: all.flatMap((fields) => fields.cluster ?? []) };
}

/**
 * Whether a root field names a member cluster (a `cluster` argument, ADR 0058): its answer is read from that member's
 * runtime caches, whose changes the `cluster` generation (local's informers) does not follow, so it is not kept.
 */
function readsAMember(document: DocumentNode, operation: OperationDefinitionNode): boolean {
  return rootFieldNodesOf(document, operation).some((field) => field.arguments?.some((argument) => argument.name.value === 'cluster'));
}

/** What a kept answer was read from: its generation says when it stops being valid. */
export type AnswerSource = 'history' | 'cluster';

/** Longer variables are not worth a key (no UI or CLI document comes near; keys stay small). */
const MAX_VARIABLES_CHARS = 2_048;

/** One answer at most this share of the budget: a few huge pages must not evict everything else. */
const MAX_ENTRY_SHARE = 8;

/**
 * The heap one kept answer takes, estimated: the parsed answer and its serialization take about twice the serialized
 * size, and the key, the entry and the maps' slots about 256 bytes more (measured: 2.2× for rollouts pages of 9 KB;
 * 630 bytes for a 200-byte key and a one-field answer, where counting the serialized size alone understated the heap
 * 3–5×, attack 7).
 */
function heapEstimate(json: string, key: string): number {
  return 2 * (json.length + key.length) + 256;
}

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
  /** Answers being read, by key (see `readInProgress`). */
  private readonly reads = new Map<string, { generation: string; answer: Promise<CachedAnswer | undefined> }>();
  /** Per parsed operation: what its answers are read from; null: not kept. */
  private readonly sources = new WeakMap<OperationDefinitionNode, AnswerSource | null>();
  private readonly historyFields: ReadonlySet<string>;
  private readonly historyOrClusterFields: ReadonlySet<string>;

  constructor(
    /** `history`: the history store's write generation; `cluster`: it and the informers' cache changes together. */
    private readonly generations: Record<AnswerSource, WriteGeneration>,
    private readonly budgetBytes: number,
    /** The root fields that may be kept (cachedRootFieldsOf: the shared ones and the registered kinds'). */
    rootFields: Required<CachedRootFields>,
  ) {
    this.historyFields = new Set(rootFields.history);
    this.historyOrClusterFields = new Set([...rootFields.history, ...rootFields.cluster]);
  }

  /** What answers to `operation` are read from, when they may be kept; undefined when they may not. */
  sourceOf(document: DocumentNode, operation: OperationDefinitionNode): AnswerSource | undefined {
    let source = this.sources.get(operation);
    if (source === undefined) {
      const fields = operation.operation === 'query' ? rootFieldsOf(document, operation) : [];
      const all = (set: ReadonlySet<string>) => fields.length > 0 && fields.every((field) => set.has(field));
      source = all(this.historyFields) ? 'history' : all(this.historyOrClusterFields) && !readsAMember(document, operation) ? 'cluster' : null;
      this.sources.set(operation, source);
    }
    return source ?? undefined;
  }

  /** The key of one question; undefined when it is not worth keeping. */
  keyOf(queryHash: string, operationName: string | undefined, role: string, variables: Record<string, unknown> | undefined): string | undefined {
    const json = variables ? JSON.stringify(variables) : '';
    if (json.length > MAX_VARIABLES_CHARS) return undefined;
    // The first part is a JSON array, so it ends where it ends: no operation name can run into the role.
    return `${JSON.stringify([queryHash, operationName ?? null, role])}${json}`;
  }

  /** The generation to hand to `keep` with an answer read from now on; null: nothing may be kept or served. */
  generationNow(source: AnswerSource): string | null {
    return this.generations[source].current();
  }

  /** The kept answer to `key`, when what it was read from has not changed since (`generation` is the current one). */
  lookup(key: string, generation: string): CachedAnswer | undefined {
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
  keep(key: string, generation: string, data: Record<string, unknown>): CachedAnswer {
    const answer = { data };
    const json = JSON.stringify(data);
    const bytes = heapEstimate(json, key);
    if (bytes > this.budgetBytes / MAX_ENTRY_SHARE) return answer;
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
    return answer;
  }

  /**
   * The answer to `key` being read right now in `generation`, to wait for rather than read again; undefined when none
   * is. After a write, the twenty dashboards polling one page would otherwise all miss at once and read it twenty times.
   */
  readInProgress(key: string, generation: string): Promise<CachedAnswer | undefined> | undefined {
    const read = this.reads.get(key);
    return read && read.generation === generation ? read.answer : undefined;
  }

  /** Marks `key` as being read in `generation`; the function returned ends the read with its answer (undefined: none to share). */
  startRead(key: string, generation: string): (answer: CachedAnswer | undefined) => void {
    let settle: (answer: CachedAnswer | undefined) => void = () => {};
    const read = { generation, answer: new Promise<CachedAnswer | undefined>((resolve) => (settle = resolve)) };
    this.reads.set(key, read);
    return (answer) => {
      if (this.reads.get(key) === read) this.reads.delete(key);
      settle(answer);
    };
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

  /** Kept answers and the heap they take (estimated), for the metrics. */
  size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
