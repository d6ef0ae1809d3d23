import { randomUUID } from 'node:crypto';
import { Admission, startServiceAccountController } from '../admission/index.js';
import { callValidatingWebhooks, type WebhookAttributes, WebhookServers } from '../admission/webhooks.js';
import { crdServing, prepareCrd, type CrdServing } from '../crd/crdDefinition.js';
import { CustomResourceSchema } from '../crd/CustomResourceSchema.js';
import { withoutPrunedFields } from '../crd/prune.js';
import type { DeleteOptions, KubeObject, ResourceType, StoreEvent, WatchableStore, WatchEventType, WriteOptions } from '../types.js';
import { alreadyExists, badRequest, conflict, expired, invalid, notFound, SimApiError } from './errors.js';
import { deepClone, deepEqual, deepFreeze } from './objects.js';
import { apiVersionOf, BUILT_IN_TYPES, hasStatus, ResourceRegistry, Resources, typeKey } from './resources.js';

export interface MemoryStoreOptions {
  /** How many past events are kept for watch resume; a resourceVersion older than the window gets 410 Expired. */
  historySize?: number;
  /** Clock for creation/deletion timestamps. */
  now?: () => Date;
  /** Reject namespaced objects whose namespace does not exist (404), as a real API server does. Default true. */
  requireNamespace?: boolean;
  /** Namespaces that exist from the start. */
  initialNamespaces?: string[];
  types?: readonly ResourceType[];
  /**
   * Run the admission and validation kube-apiserver always runs (src/sim/admission) on every write, and give every
   * namespace its `default` ServiceAccount. Default true; false keeps only the name-required and type checks.
   */
  admission?: boolean;
  /** Called when a subscriber throws; the write itself has already committed. */
  onListenerError?: (error: unknown) => void;
  /**
   * Deep-freeze every stored version, so that any reader mutating a shared object throws at once. Default
   * `MemoryStore.freezeByDefault`: on in the test suite (test/setup.ts), off elsewhere, where stored versions are
   * immutable by contract only. Freezing costs: with 10,000 pools and their agents, the simulator's heap was about
   * 400 MB frozen against 270 MB not, and its CPU per request higher.
   */
  freeze?: boolean;
}

/** Versions the store committed: immutable (by freezing or by contract), so their serialization can be cached. */
const storedVersions = new WeakSet<object>();

/** True for an object the store committed as a version (never changes while it lives). */
export function isStoredVersion(object: object): boolean {
  return storedVersions.has(object);
}

/** One CRD version's schema, compiled once (kept while its JSON does not change). */
interface CompiledSchema {
  json: string;
  schema: CustomResourceSchema;
}

/** A CRD ready to serve: its type key, what it serves and each version's compiled schema. */
interface CompiledCrd {
  key: string;
  serving: CrdServing;
  schemas: Map<string, CompiledSchema>;
}

interface TypeState {
  /** The stored type (a CRD's storage version; a CRD update replaces it). */
  type: ResourceType;
  /** A custom type's served versions: version → its type (empty for built-in types, served in `type` only). */
  served: Map<string, ResourceType>;
  /** Stored object → its views in other versions (viewAs); replaced whenever the CRD changes. */
  views: WeakMap<KubeObject, Map<string, KubeObject>>;
  readonly key: string;
  /** namespace ('' for cluster-scoped) → name → frozen object */
  readonly byNamespace: Map<string, Map<string, KubeObject>>;
  size: number;
}

const POD_DEFAULT_GRACE_SECONDS = 30;
const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const NOT_SPEC = new Set(['metadata', 'status', 'apiVersion', 'kind']);

/**
 * The simulator's etcd: one revision counter, maps keyed type → namespace → name, and a bounded event history.
 *
 * Contract beyond ObjectStore: every object handed out (get/list/events/return values) is shared and must never be
 * modified (deeply frozen under the `freeze` option) — clone before modifying (`structuredClone` works). Inputs are copied, never retained, unless the writer hands one
 * over (WriteOptions.handOver). Events reach subscribers
 * synchronously and in commit order, also when a subscriber writes to the store from inside its listener (such writes
 * are queued behind the event being delivered).
 */
export class MemoryStore implements WatchableStore {
  /** The default of `MemoryStore` option `freeze` (the test suite turns it on). */
  static freezeByDefault = false;
  readonly registry: ResourceRegistry;
  /** typeKey → version → the schema of that version of a custom resource type (compiled once per CRD version). */
  private readonly schemas = new Map<string, Map<string, CompiledSchema>>();
  private readonly freeze: boolean;
  private readonly states = new Map<string, TypeState>();
  private revision = 0;
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private readonly pending: StoreEvent[] = [];
  private delivering = false;
  private readonly history: (StoreEvent | undefined)[];
  private historyCount = 0;
  /** owner uid → keys of objects whose ownerReferences name it (for garbage collection). */
  private readonly dependents = new Map<string, Set<string>>();
  private readonly now: () => Date;
  private readonly requireNamespace: boolean;
  private readonly onListenerError: (error: unknown) => void;
  /** Set while `dryRun` runs: writes are computed and validated but neither stored nor announced. */
  private dry = false;
  private readonly admission: Admission | undefined;
  /** The webhook servers simulated programs run behind Services (ValidatingWebhookConfigurations call them). */
  readonly webhookServers = new WebhookServers();

  constructor(options: MemoryStoreOptions = {}) {
    this.registry = new ResourceRegistry(options.types ?? BUILT_IN_TYPES);
    for (const type of this.registry.types) {
      this.states.set(typeKey(type), newState(type, typeKey(type)));
    }
    this.history = new Array(Math.max(1, options.historySize ?? 10_000));
    this.now = options.now ?? (() => new Date());
    this.requireNamespace = options.requireNamespace ?? true;
    this.onListenerError = options.onListenerError ?? (() => {});
    this.freeze = options.freeze ?? MemoryStore.freezeByDefault;
    if (options.admission !== false) {
      this.admission = new Admission(this);
      startServiceAccountController(this);
    }
    for (const name of options.initialNamespaces ?? ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      this.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
  }

  resourceTypes(): ResourceType[] {
    return [...this.registry.types];
  }

  resourceType(group: string, plural: string): ResourceType | undefined {
    return this.registry.byGroupPlural(group, plural);
  }

  resourceTypeForKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.registry.byApiVersionKind(apiVersion, kind);
  }

  currentRevision(): number {
    return this.revision;
  }

  /** Oldest revision R such that watching "from R" (events after R) is still possible. */
  oldestResumableRevision(): number {
    return this.revision - this.historyCount;
  }

  /**
   * Events committed after `revision`, oldest first, optionally for one type. Throws 410 Expired when the window no
   * longer holds all of them.
   */
  eventsSince(revision: number, type?: ResourceType): StoreEvent[] {
    if (revision < this.oldestResumableRevision()) {
      throw expired(`too old resource version: ${revision} (${this.oldestResumableRevision() + 1})`);
    }
    const out: StoreEvent[] = [];
    const size = this.history.length;
    const wanted = type ? typeKey(type) : undefined;
    for (let rv = Math.max(revision, this.oldestResumableRevision()) + 1; rv <= this.revision; rv++) {
      const event = this.history[rv % size]!;
      if (!wanted || event.resource === type || typeKey(event.resource) === wanted) out.push(event);
    }
    return out;
  }

  count(type: ResourceType): number {
    return this.state(type).size;
  }

  get(requested: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const state = this.state(requested);
    const type = this.typeIn(state, requested);
    const object = state.byNamespace.get(type.namespaced ? (namespace ?? '') : '')?.get(name);
    return object && this.viewIn(state, type, object);
  }

  list(requested: ResourceType, namespace?: string): KubeObject[] {
    const state = this.state(requested);
    const type = this.typeIn(state, requested);
    const out: KubeObject[] = [];
    // Objects already in the requested version (all of them, for a built-in type) are handed out as stored.
    const apiVersion = type.custom ? apiVersionOf(type) : undefined;
    const push = (object: KubeObject) => out.push(apiVersion === undefined || object.apiVersion === apiVersion ? object : this.viewIn(state, type, object));
    if (type.namespaced && namespace !== undefined && namespace !== '') {
      const names = state.byNamespace.get(namespace);
      if (names) for (const object of names.values()) push(object);
      return out;
    }
    for (const names of state.byNamespace.values()) for (const object of names.values()) push(object);
    return out;
  }

  viewAs(type: ResourceType, object: KubeObject): KubeObject {
    if (!type.custom) return object;
    const state = this.states.get(typeKey(type));
    return state ? this.viewIn(state, type, object) : object;
  }

  /**
   * A stored object as a request through `type` sees it. Conversion None: only apiVersion changes, then the requested
   * version's schema prunes the result (as kube-apiserver prunes after conversion); the storage version's own requests
   * get the stored object itself.
   */
  private viewIn(state: TypeState, type: ResourceType, object: KubeObject): KubeObject {
    if (!type.custom || object.apiVersion === `${type.group}/${type.version}`) return object;
    let views = state.views.get(object);
    let view = views?.get(type.version);
    if (view) return view;
    view = deepClone(object);
    view.apiVersion = `${type.group}/${type.version}`;
    this.schemas.get(state.key)?.get(type.version)?.schema.prune(view);
    this.seal(view);
    if (!views) {
      views = new Map();
      state.views.set(object, views);
    }
    views.set(type.version, view);
    return view;
  }

  /**
   * The type a request through `requested` is served as: a custom type's requested version (404 when that version is
   * not served), else the stored type.
   */
  private typeIn(state: TypeState, requested: ResourceType): ResourceType {
    if (!state.type.custom || requested.version === state.type.version) return state.type;
    const type = state.served.get(requested.version);
    if (!type)
      throw new SimApiError(404, 'NotFound', `the server could not find the requested resource (${requested.group}/${requested.version}, ${requested.plural})`);
    return type;
  }

  create(requested: ResourceType, input: KubeObject, options?: WriteOptions): KubeObject {
    const state = this.state(requested);
    const type = this.typeIn(state, requested);
    const object = options?.handOver ? input : deepClone(input);
    this.checkTypeMeta(type, object);
    object.metadata ??= { name: '' };
    const meta = object.metadata;
    const namespace = this.namespaceFor(type, meta.namespace);
    if (type.namespaced) meta.namespace = namespace;
    else delete meta.namespace;
    if (this.requireNamespace && type.namespaced && !this.get(Resources.namespaces, undefined, namespace)) {
      throw notFound('namespaces', namespace);
    }
    const names = state.byNamespace.get(namespace);
    if (!meta.name && meta.generateName) {
      do meta.name = meta.generateName + randomSuffix();
      while (names?.has(meta.name));
    }
    if (this.admission) this.admission.admit({ operation: 'CREATE', type, object });
    else if (!meta.name) this.nameRequired(type);
    if (names?.has(meta.name)) throw alreadyExists(type.plural, meta.name, type.group);

    meta.uid = randomUUID();
    meta.generation = 1;
    meta.creationTimestamp = timestamp(this.now());
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (type === Resources.namespaces) object.status = { phase: 'Active', ...(object.status ?? {}) };
    let compiled: CompiledCrd | undefined;
    if (type === Resources.customresourcedefinitions) compiled = this.compileCrd(object, undefined);
    else if (type.custom) {
      this.admitCustom(state, type, object, undefined, undefined, options);
      this.toStorage(state, type, object, undefined, false);
    }
    this.callWebhooks({ operation: 'CREATE', type, object });
    // A CRD serves before its event goes out, so that a client reacting to the event finds its versions served.
    if (compiled && !this.dry) this.serveCrd(object, compiled);
    const created = this.commit(state, 'ADDED', object, undefined);
    return this.viewIn(state, type, created);
  }

  update(requested: ResourceType, input: KubeObject, subresource?: string, options?: WriteOptions): KubeObject {
    const state = this.state(requested);
    const type = this.typeIn(state, requested);
    const meta = input.metadata;
    if (!meta?.name) throw invalid(type.kind, '', [{ field: 'metadata.name', message: 'Required value: name is required' }]);
    const namespace = this.namespaceFor(type, meta.namespace);
    const existing = state.byNamespace.get(namespace)?.get(meta.name);
    if (!existing) throw notFound(type.plural, meta.name, type.group);
    if (meta.uid && meta.uid !== existing.metadata.uid) {
      throw conflict(type.plural, meta.name, `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${existing.metadata.uid}`, type.group);
    }
    if (meta.resourceVersion && meta.resourceVersion !== existing.metadata.resourceVersion) {
      throw conflict(type.plural, meta.name, 'the object has been modified; please apply your changes to the latest version and try again', type.group);
    }

    const keep = options?.handOver === true && mayKeepHandedOver(state, type, existing);
    let next: KubeObject;
    if (subresource === 'status') {
      if (!hasStatus(type)) throw new SimApiError(404, 'NotFound', `${type.plural} has no status subresource`);
      next = { ...existing, metadata: { ...existing.metadata } };
      if (type.custom) next.apiVersion = apiVersionOf(type);
      if (input.status === undefined) delete next.status;
      else next.status = keep ? input.status : deepClone(input.status);
      if (meta.managedFields !== undefined) next.metadata.managedFields = keep ? meta.managedFields : deepClone(meta.managedFields);
    } else if (subresource !== undefined && !(subresource === 'binding' && type === Resources.pods)) {
      // pods/binding is the in-process scheduler's bind: a main-resource write that admission limits to spec.nodeName.
      throw new SimApiError(404, 'NotFound', `${type.plural} has no ${subresource} subresource`);
    } else {
      next = keep ? input : deepClone(input);
      this.checkTypeMeta(type, next);
      const m = next.metadata;
      const old = existing.metadata;
      m.namespace = old.namespace;
      if (!type.namespaced) delete m.namespace;
      m.uid = old.uid;
      m.creationTimestamp = old.creationTimestamp;
      m.generation = old.generation;
      copyOrDelete(m, old, 'deletionTimestamp');
      copyOrDelete(m, old, 'deletionGracePeriodSeconds');
      delete m.generateName;
      if (old.generateName) m.generateName = old.generateName;
      if (hasStatus(type)) {
        if (existing.status === undefined) delete next.status;
        else next.status = existing.status;
      }
      if (old.deletionTimestamp) {
        const added = (m.finalizers ?? []).filter((f) => !(old.finalizers ?? []).includes(f));
        if (added.length > 0) {
          throw new SimApiError(
            422,
            'Invalid',
            `${type.kind} "${meta.name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
          );
        }
      }
      this.admission?.admit({ operation: 'UPDATE', type, object: next, old: existing, ...(subresource ? { subresource } : {}) });
      if (!specEqual(existing, next)) m.generation = (old.generation ?? 1) + 1;
    }
    let compiled: CompiledCrd | undefined;
    if (type === Resources.customresourcedefinitions) compiled = this.compileCrd(next, existing, subresource);
    else if (type.custom) {
      this.admitCustom(state, type, next, this.viewIn(state, type, existing), subresource, options);
      this.toStorage(state, type, next, subresource, true);
    }
    next.metadata.resourceVersion = existing.metadata.resourceVersion;
    // Validating webhooks see no-op updates too (kube-apiserver admits before storage finds nothing changed).
    this.callWebhooks({ operation: 'UPDATE', type, object: next, old: existing, ...(subresource ? { subresource } : {}) });
    if (deepEqual(next, existing)) return this.viewIn(state, type, existing);

    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      const podStillTerminating = type === Resources.pods && (next.metadata.deletionGracePeriodSeconds ?? 0) > 0;
      if (!podStillTerminating) return this.viewIn(state, type, this.remove(state, next, 'Background'));
    }
    if (compiled && !this.dry) this.serveCrd(next, compiled);
    const updated = this.commit(state, 'MODIFIED', next, existing);
    return this.viewIn(state, type, updated);
  }

  delete(requested: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): KubeObject {
    const state = this.state(requested);
    const type = this.typeIn(state, requested);
    return this.viewIn(state, type, this.deleteIn(state, type, namespace, name, options));
  }

  private deleteIn(state: TypeState, type: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions): KubeObject {
    const ns = this.namespaceFor(type, namespace);
    const existing = state.byNamespace.get(ns)?.get(name);
    if (!existing) throw notFound(type.plural, name, type.group);
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== existing.metadata.uid) {
      throw conflict(type.plural, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid}`, type.group);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
      throw conflict(
        type.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion}`,
        type.group,
      );
    }
    const policy = options.propagationPolicy ?? 'Background';
    this.admission?.admit({ operation: 'DELETE', type, object: existing });
    this.callWebhooks({ operation: 'DELETE', type, old: existing });
    if (type === Resources.namespaces) this.emptyNamespace(name);
    if (policy === 'Orphan') this.orphanDependents(existing.metadata.uid!);
    if (policy === 'Foreground') this.deleteDependents(existing.metadata.uid!);

    const current = state.byNamespace.get(ns)?.get(name) ?? existing;
    const hasFinalizers = (current.metadata.finalizers ?? []).length > 0;
    const grace = this.graceSeconds(type, current, options.gracePeriodSeconds);

    if (current.metadata.deletionTimestamp) {
      // Already terminating: only a shorter grace period (a force delete) changes anything.
      const previousGrace = current.metadata.deletionGracePeriodSeconds ?? 0;
      if (grace >= previousGrace) return current;
      if (!hasFinalizers && grace === 0) return this.remove(state, current, policy);
      const next = { ...current, metadata: { ...current.metadata, deletionGracePeriodSeconds: grace } };
      return this.commit(state, 'MODIFIED', next, current);
    }
    if (!hasFinalizers && grace === 0) return this.remove(state, current, policy);
    const next: KubeObject = {
      ...current,
      metadata: {
        ...current.metadata,
        deletionTimestamp: timestamp(new Date(this.now().getTime() + grace * 1000)),
        deletionGracePeriodSeconds: grace,
      },
    };
    // A namespace that finalizers keep is Terminating, and refuses new content (admission's NamespaceLifecycle).
    if (type === Resources.namespaces) next.status = { ...current.status, phase: 'Terminating' };
    return this.commit(state, 'MODIFIED', next, current);
  }

  /** The validating admission webhooks (after built-in admission and schema validation, as kube-apiserver orders them). */
  private callWebhooks(attributes: Omit<WebhookAttributes, 'dryRun'>): void {
    if (!this.admission) return;
    callValidatingWebhooks(this, this.webhookServers, { ...attributes, dryRun: this.dry });
  }

  /**
   * Runs store calls as a server-side dry run (`?dryRun=All`): everything is validated and the would-be result is
   * returned, but nothing is stored, no revision is used and no event is sent.
   */
  dryRun<T>(fn: () => T): T {
    const previous = this.dry;
    this.dry = true;
    try {
      return fn();
    } finally {
      this.dry = previous;
    }
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private graceSeconds(type: ResourceType, object: KubeObject, requested: number | undefined): number {
    if (type !== Resources.pods) return 0;
    // As the real API server: a pod never bound to a node, or already finished, has no kubelet to wait for.
    if (!object.spec?.nodeName) return 0;
    const phase = object.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return 0;
    const grace = requested ?? object.spec?.terminationGracePeriodSeconds ?? POD_DEFAULT_GRACE_SECONDS;
    return Math.max(0, grace);
  }

  private remove(state: TypeState, object: KubeObject, policy: DeleteOptions['propagationPolicy']): KubeObject {
    const ns = object.metadata.namespace ?? '';
    const names = state.byNamespace.get(ns);
    const existing = names?.get(object.metadata.name);
    if (!names || !existing) return object;
    if (this.dry) return deepFreeze({ ...object });
    // A CRD goes after its objects (as the apiextensions finalizer has them deleted first), so that a watch on the type
    // sees their DELETED events before the CRD's own.
    if (state.type === Resources.customresourcedefinitions) this.unserveType(`${existing.spec?.group}/${existing.spec?.names?.plural}`);
    names.delete(object.metadata.name);
    if (names.size === 0) state.byNamespace.delete(ns);
    state.size--;
    this.revision++;
    const gone = this.seal({ ...object, metadata: { ...object.metadata, resourceVersion: String(this.revision) } });
    this.indexOwners(state.key, existing, undefined);
    this.emit({ type: 'DELETED', resource: state.type, object: gone, previous: existing });
    const uid = existing.metadata.uid!;
    if (policy === 'Orphan') this.orphanDependents(uid);
    else this.deleteDependents(uid);
    return gone;
  }

  /**
   * A custom resource about to be written: pruned, nulls dropped and defaulted (in place), then validated against its
   * CRD's schema (422 Invalid). On a status update only `status` is normalized; on a main-resource update of a type
   * with a status subresource, `status` is the stored one and is left alone (both were normalized when written).
   */
  private admitCustom(
    state: TypeState,
    type: ResourceType,
    object: KubeObject,
    old: KubeObject | undefined,
    subresource: string | undefined,
    options: WriteOptions | undefined,
  ): void {
    const compiled = this.schemas.get(state.key)?.get(type.version)?.schema;
    if (!compiled) return;
    let unknown: string[];
    if (subresource === 'status') {
      const view: Record<string, unknown> = { status: object.status };
      unknown = object.status === undefined ? [] : compiled.normalize(view);
      if (view.status === undefined) delete object.status;
      else object.status = view.status;
    } else if (old && hasStatus(type)) {
      const status = object.status;
      delete object.status;
      unknown = compiled.normalize(object);
      if (status !== undefined) object.status = status;
    } else unknown = compiled.normalize(object);
    if (unknown.length > 0) {
      options?.onUnknownFields?.(unknown);
      const managed = withoutPrunedFields(object.metadata.managedFields, unknown);
      if (managed) {
        object.metadata = { ...object.metadata, managedFields: managed };
        if (managed.length === 0) delete object.metadata.managedFields;
      }
    }
    const part = subresource === 'status' ? 'status' : old && hasStatus(type) ? 'main' : 'all';
    const causes = compiled.validate(object, old, part);
    if (causes.length > 0) throw invalid(type.kind, object.metadata.name, causes, type.group);
  }

  /**
   * An object written through another version than the storage one, made what etcd would hold: the storage version's
   * apiVersion (conversion None), then pruned and defaulted by the storage version's schema, which every read from
   * storage applies in kube-apiserver (a field only the requested version declares is therefore lost). Only the part
   * the write could change is touched, as in admitCustom.
   */
  private toStorage(state: TypeState, type: ResourceType, object: KubeObject, subresource: string | undefined, update: boolean): void {
    if (type === state.type) return;
    object.apiVersion = apiVersionOf(state.type);
    const compiled = this.schemas.get(state.key)?.get(state.type.version)?.schema;
    if (!compiled) return;
    let removed: string[];
    if (subresource === 'status') {
      const view: Record<string, unknown> = { status: object.status };
      removed = object.status === undefined ? [] : compiled.normalize(view);
      if (view.status === undefined) delete object.status;
      else object.status = view.status;
    } else if (update && hasStatus(type)) {
      const status = object.status;
      delete object.status;
      removed = compiled.normalize(object);
      if (status !== undefined) object.status = status;
    } else removed = compiled.normalize(object);
    if (removed.length === 0) return;
    const managed = withoutPrunedFields(object.metadata.managedFields, removed);
    if (managed) {
      object.metadata = { ...object.metadata, managedFields: managed };
      if (managed.length === 0) delete object.metadata.managedFields;
    }
  }

  /**
   * Checks and defaults a CRD about to be written and compiles each version's schema (reusing the compiled one when a
   * schema did not change), all before the write commits, so that a schema ajv cannot compile (a pattern JavaScript
   * does not accept, say) refuses the CRD instead of breaking the store.
   */
  private compileCrd(crd: KubeObject, old: KubeObject | undefined, subresource?: string): CompiledCrd {
    prepareCrd(crd, old, subresource);
    const serving = crdServing(crd);
    const key = `${crd.spec.group}/${crd.spec.names.plural}`;
    const cached = this.schemas.get(key);
    const schemas = new Map<string, CompiledSchema>();
    for (const [version, schema] of serving.schemas) {
      const json = JSON.stringify(schema);
      const previous = cached?.get(version);
      if (previous?.json === json) {
        schemas.set(version, previous);
        continue;
      }
      try {
        schemas.set(version, { json, schema: new CustomResourceSchema(deepClone(schema)) });
      } catch (error) {
        const index = (crd.spec.versions as { name: string }[]).findIndex((v) => v.name === version);
        throw invalid(
          'CustomResourceDefinition',
          crd.metadata.name,
          [
            {
              type: 'FieldValueInvalid',
              field: `spec.versions[${index}].schema.openAPIV3Schema`,
              message: `Invalid value: "object": ${(error as Error).message}`,
            },
          ],
          'apiextensions.k8s.io',
        );
      }
    }
    return { key, serving, schemas };
  }

  /**
   * Serves what an (established) CRD defines: registers its served versions (none served: the objects stay stored but
   * unreachable, as in etcd), keeps each version's compiled schema, and re-normalizes stored objects when a schema
   * changed (kube-apiserver prunes and defaults on every read from storage, by the schema of the version an object is
   * stored in; here the stored versions are rewritten in place, keeping their resourceVersion and sending no event).
   */
  private serveCrd(crd: KubeObject, { key, serving, schemas }: CompiledCrd): void {
    if (crd.metadata.deletionTimestamp) return;
    const builtIn = this.states.get(key);
    if (builtIn && !builtIn.type.custom) return;
    const before = this.schemas.get(key);
    const schemaChanged = !before || [...schemas].some(([version, compiled]) => before.get(version) !== compiled);
    this.schemas.set(key, schemas);
    let state = this.states.get(key);
    if (!state) {
      state = newState(serving.storage, key);
      this.states.set(key, state);
    } else state.type = serving.storage;
    state.served = new Map(serving.served.map((t) => [t.version, t]));
    state.views = new WeakMap();
    this.registry.set(serving.storage, serving.served);
    if (schemaChanged && state.size > 0) this.renormalize(state);
  }

  private renormalize(state: TypeState): void {
    const schemas = this.schemas.get(state.key)!;
    const prefix = `${state.type.group}/`;
    for (const names of state.byNamespace.values()) {
      for (const [name, object] of names) {
        // Each object by the schema of the version it is stored in (a storage version change rewrites none of them).
        const version =
          typeof object.apiVersion === 'string' && object.apiVersion.startsWith(prefix) ? object.apiVersion.slice(prefix.length) : state.type.version;
        const compiled = schemas.get(version)?.schema;
        if (!compiled) continue;
        const next = deepClone(object);
        compiled.normalize(next);
        if (!deepEqual(next, object)) names.set(name, this.seal(next));
      }
    }
  }

  /** A CRD went away: so do its objects (at once, finalizers or not) and its type. */
  private unserveType(key: string): void {
    const state = this.states.get(key);
    if (!state?.type.custom) return;
    for (const names of Array.from(state.byNamespace.values())) {
      for (const object of Array.from(names.values())) {
        const stripped: KubeObject = { ...object, metadata: { ...object.metadata } };
        delete stripped.metadata.finalizers;
        this.remove(state, stripped, 'Background');
      }
    }
    this.states.delete(key);
    this.schemas.delete(key);
    this.registry.remove(state.type);
  }

  private commit(state: TypeState, type: WatchEventType, object: KubeObject, previous: KubeObject | undefined): KubeObject {
    if (this.dry) {
      if (previous) object.metadata.resourceVersion = previous.metadata.resourceVersion;
      else delete object.metadata.resourceVersion;
      return deepFreeze(object);
    }
    this.revision++;
    object.metadata.resourceVersion = String(this.revision);
    this.seal(object);
    const ns = object.metadata.namespace ?? '';
    let names = state.byNamespace.get(ns);
    if (!names) {
      names = new Map();
      state.byNamespace.set(ns, names);
    }
    names.set(object.metadata.name, object);
    if (!previous) state.size++;
    this.indexOwners(state.key, previous, object);
    const event: StoreEvent = { type, resource: state.type, object };
    if (previous) event.previous = previous;
    this.emit(event);
    return object;
  }

  /** Makes `object` a stored version: frozen when the store freezes, immutable by contract in any case. */
  private seal<T extends KubeObject>(object: T): T {
    if (this.freeze) deepFreeze(object);
    storedVersions.add(object);
    return object;
  }

  private emit(event: StoreEvent): void {
    this.history[this.revision % this.history.length] = event;
    if (this.historyCount < this.history.length) this.historyCount++;
    this.pending.push(event);
    if (this.delivering) return;
    this.delivering = true;
    try {
      for (let i = 0; i < this.pending.length; i++) {
        const next = this.pending[i]!;
        for (const listener of this.listeners) {
          try {
            listener(next);
          } catch (error) {
            this.onListenerError(error);
          }
        }
      }
    } finally {
      this.pending.length = 0;
      this.delivering = false;
    }
  }

  private indexOwners(key: string, before: KubeObject | undefined, after: KubeObject | undefined): void {
    const beforeOwners = before?.metadata.ownerReferences ?? [];
    const afterOwners = after?.metadata.ownerReferences ?? [];
    if (beforeOwners.length === 0 && afterOwners.length === 0) return;
    const meta = (after ?? before)!.metadata;
    const ref = `${key}\u0000${meta.namespace ?? ''}\u0000${meta.name}`;
    for (const owner of beforeOwners) {
      if (afterOwners.some((o) => o.uid === owner.uid)) continue;
      const set = this.dependents.get(owner.uid);
      set?.delete(ref);
      if (set?.size === 0) this.dependents.delete(owner.uid);
    }
    for (const owner of afterOwners) {
      let set = this.dependents.get(owner.uid);
      if (!set) {
        set = new Set();
        this.dependents.set(owner.uid, set);
      }
      set.add(ref);
    }
  }

  private dependentsOf(uid: string): { state: TypeState; object: KubeObject }[] {
    const out: { state: TypeState; object: KubeObject }[] = [];
    for (const ref of this.dependents.get(uid) ?? []) {
      const [key, ns, name] = ref.split('\u0000') as [string, string, string];
      const state = this.states.get(key);
      const object = state?.byNamespace.get(ns)?.get(name);
      if (state && object) out.push({ state, object });
    }
    return out;
  }

  private deleteDependents(uid: string): void {
    for (const { state, object } of this.dependentsOf(uid)) {
      if (object.metadata.deletionTimestamp) continue;
      try {
        this.delete(state.type, object.metadata.namespace, object.metadata.name, { propagationPolicy: 'Background' });
      } catch (error) {
        if (!(error instanceof SimApiError && error.code === 404)) throw error;
      }
    }
  }

  private orphanDependents(uid: string): void {
    for (const { state, object } of this.dependentsOf(uid)) {
      const owners = (object.metadata.ownerReferences ?? []).filter((o) => o.uid !== uid);
      const next: KubeObject = { ...object, metadata: { ...object.metadata } };
      if (owners.length > 0) next.metadata.ownerReferences = owners.map((o) => ({ ...o }));
      else delete next.metadata.ownerReferences;
      this.commit(state, 'MODIFIED', next, object);
    }
  }

  /** A deleted namespace takes everything in it along at once (the real namespace controller is slower). */
  private emptyNamespace(namespace: string): void {
    for (const state of this.states.values()) {
      if (!state.type.namespaced) continue;
      const names = state.byNamespace.get(namespace);
      if (!names) continue;
      for (const object of Array.from(names.values())) {
        const stripped: KubeObject = { ...object, metadata: { ...object.metadata } };
        delete stripped.metadata.finalizers;
        this.remove(state, stripped, 'Background');
      }
    }
  }

  private state(type: ResourceType): TypeState {
    const state = this.states.get(typeKey(type));
    if (!state) throw new SimApiError(404, 'NotFound', `the server could not find the requested resource (${typeKey(type)})`);
    return state;
  }

  private namespaceFor(type: ResourceType, namespace: string | undefined): string {
    if (!type.namespaced) return '';
    if (!namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    return namespace;
  }

  private checkTypeMeta(type: ResourceType, object: KubeObject): void {
    const apiVersion = apiVersionOf(type);
    if (object.apiVersion && object.apiVersion !== apiVersion) {
      throw badRequest(`the API version in the data (${object.apiVersion}) does not match the expected API version (${apiVersion})`);
    }
    if (object.kind && object.kind !== type.kind) {
      throw badRequest(`the kind in the data (${object.kind}) does not match the expected kind (${type.kind})`);
    }
    object.apiVersion = apiVersion;
    object.kind = type.kind;
  }

  private nameRequired(type: ResourceType): never {
    throw invalid(
      type.kind,
      '',
      [{ type: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }],
      type.group,
    );
  }
}

/**
 * Whether an update may keep the input handed over (WriteOptions.handOver) instead of copying it. Its parts shared
 * with stored versions are normalized already, so the schema's in-place pruning, null dropping and defaulting leave
 * them as they are — when the schema is the one they were normalized by: a built-in type has none; a custom type's
 * write must go through its storage version onto an object stored in that version. Anything else is copied.
 */
function mayKeepHandedOver(state: TypeState, type: ResourceType, existing: KubeObject): boolean {
  return !type.custom || (type === state.type && existing.apiVersion === apiVersionOf(state.type));
}

function newState(type: ResourceType, key: string): TypeState {
  return { type, key, served: new Map(), views: new WeakMap(), byNamespace: new Map(), size: 0 };
}

/** RFC 3339 with second precision, as Kubernetes serializes metav1.Time. */
export function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function randomSuffix(): string {
  let out = '';
  for (let i = 0; i < 5; i++) out += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
  return out;
}

function specEqual(a: KubeObject, b: KubeObject): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) {
    if (NOT_SPEC.has(key)) continue;
    if (!deepEqual(a[key], b[key])) return false;
  }
  return true;
}

function copyOrDelete<K extends 'deletionTimestamp' | 'deletionGracePeriodSeconds'>(
  target: KubeObject['metadata'],
  source: KubeObject['metadata'],
  key: K,
): void {
  if (source[key] === undefined) delete target[key];
  else target[key] = source[key];
}
