/**
 * Contract between the simulator's object store (src/sim/store) and everything that acts on it in-process:
 * the HTTP API server (src/sim/api), the simulated kubelet and workload controllers (src/sim/behaviour), the fleet
 * generator (src/sim/fleet) and the fault injector. Objects are plain Kubernetes JSON objects.
 */

/** A Kubernetes object as JSON. `metadata` is always present on stored objects. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: any;
  status?: any;
  [field: string]: unknown;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
  generateName?: string;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Identifies a resource type, e.g. {group: 'apps', version: 'v1', plural: 'deployments'}; core group is ''. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** Which subresources exist (e.g. ['status']). */
  subresources: string[];
  shortNames?: string[];
  /** Defaults to the lower-case kind. */
  singular?: string;
  /** Defaults to `<kind>List`. */
  listKind?: string;
  categories?: string[];
  /** Served from a CustomResourceDefinition (schema applied on every write; no strategic merge patch). */
  custom?: boolean;
  /** The served version's OpenAPI v3 schema (custom resources), as the CRD gives it. */
  schema?: Record<string, unknown>;
  /**
   * A custom resource's storage version, when this type is one of several served versions of its CRD: the objects are
   * stored once, in that version, and this version's requests see them with their apiVersion rewritten (conversion
   * strategy None). Absent: this type is the storage version.
   */
  storageVersion?: string;
  /** A deprecated CRD version's warning, sent in a `Warning: 299` header on every request through this version. */
  deprecationWarning?: string;
  /** A CRD version's additionalPrinterColumns (server-side `kubectl get` columns). */
  printerColumns?: { name: string; type: string; jsonPath: string; format?: string; description?: string; priority?: number }[];
}

/** Per-write options of the store. */
export interface WriteOptions {
  /**
   * Told the paths of the fields a custom resource's schema pruned (`spec.foo`), before the write commits; it may
   * throw to refuse the write (`?fieldValidation=Strict`) or collect warnings (`Warn`). Without it they are pruned.
   */
  onUnknownFields?: (paths: string[]) => void;
  /**
   * The caller hands the input over: the store keeps it instead of a deep copy (the same checks run on it; only the
   * copy is saved). The input's own object and its `metadata` must be fresh (the store sets fields on them), and so
   * must every part the caller changed; the rest may be shared with the stored version, which never changes (frozen in
   * the test suite). A custom type's schema prunes and defaults in place, which leaves a stored part as it is only
   * under the schema it was normalized by: an update of a custom type through another version than its storage one,
   * or onto an object stored in another version, is copied anyway (MemoryStore's mayKeepHandedOver). The API writer
   * hands over what it parsed from a request body and what a patch made of the stored version; the built-in kubelet
   * and scheduler the pods they write; the simulated vm-dhcp-controller the statuses its handlers write.
   */
  handOver?: boolean;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: WatchEventType;
  resource: ResourceType;
  object: KubeObject;
  /** The object before the change (undefined for ADDED). */
  previous?: KubeObject;
}

export interface DeleteOptions {
  /** Seconds; 0 deletes at once (force). Undefined = the object's default (pods: 30 s unless the node is Ready, see kubelet). */
  gracePeriodSeconds?: number;
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** Optimistic concurrency precondition. */
  preconditions?: { uid?: string; resourceVersion?: string };
}

/**
 * In-memory object store with a single, monotonically increasing resourceVersion counter (as etcd's revision).
 * Every write bumps the counter, sets metadata.resourceVersion, and emits exactly one StoreEvent synchronously to
 * subscribers, in commit order. Errors are thrown as SimApiError (Status-shaped, src/sim/store/errors.ts).
 * Objects handed out are deeply frozen and shared: clone (structuredClone) before modifying. Inputs are copied.
 * Implementation: src/sim/store/MemoryStore.ts; resource type handles: `Resources` in src/sim/store/resources.ts.
 */
export interface ObjectStore {
  resourceTypes(): ResourceType[];
  resourceType(group: string, plural: string): ResourceType | undefined;
  resourceTypeForKind(apiVersion: string, kind: string): ResourceType | undefined;

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined;
  list(type: ResourceType, namespace?: string): KubeObject[];
  /** Assigns uid, resourceVersion, generation 1, creationTimestamp; 409 AlreadyExists when the name is taken. */
  create(type: ResourceType, object: KubeObject, options?: WriteOptions): KubeObject;
  /**
   * Replaces the object. If object.metadata.resourceVersion is set and stale → 409 Conflict. `subresource` 'status'
   * changes only .status; otherwise .status is kept from the stored object for types that have a status subresource.
   * generation is bumped when .spec changes.
   */
  update(type: ResourceType, object: KubeObject, subresource?: string, options?: WriteOptions): KubeObject;
  /**
   * Graceful delete: sets deletionTimestamp (and keeps the object) when it has finalizers or a grace period > 0 is
   * in effect; removes it at once otherwise. Returns the object as last stored.
   */
  delete(type: ResourceType, namespace: string | undefined, name: string, options?: DeleteOptions): KubeObject;
  /** Current resourceVersion counter. */
  currentRevision(): number;
  /** Webhook servers behind Services, called by ValidatingWebhookConfigurations (absent: no webhook is served). */
  readonly webhookServers?: import('./admission/webhooks.js').WebhookServers;
  subscribe(listener: (event: StoreEvent) => void): () => void;
}

/** What the HTTP API server needs beyond ObjectStore: watch resume from the bounded event history. */
export interface WatchableStore extends ObjectStore {
  /** The served types, live: CustomResourceDefinitions add and remove types while the store runs. */
  readonly registry: import('./store/resources.js').ResourceRegistry;
  /** Events committed after `revision`, oldest first; throws SimApiError 410 Expired when the window no longer has them. */
  eventsSince(revision: number, type?: ResourceType): StoreEvent[];
  /**
   * `object` (a stored version, or an event's object) as requests through `type`'s version see it: the same object
   * when that is the version it is stored in, else a view with the requested apiVersion, pruned by that version's
   * schema (kube-apiserver's conversion None, then pruning after conversion). Views are cached and immutable.
   */
  viewAs(type: ResourceType, object: KubeObject): KubeObject;
  /** The oldest revision a watch can still resume from (events after it are all retained). */
  oldestResumableRevision(): number;
  /** Runs `fn`'s store calls as a dry run: validated and computed, never stored or announced. */
  dryRun<T>(fn: () => T): T;
}

/** A request the HTTP API server is about to serve, as seen by fault injection. */
export type ApiVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export interface ApiRequestInfo {
  verb: ApiVerb;
  resource: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
  /** `?dryRun=All`: validated and admitted, never stored. */
  dryRun?: boolean;
}

/**
 * Extension points of the HTTP API server (src/sim/api/ApiServer.ts), used by the fault injector and its admin
 * endpoint. Both are optional and may be set or replaced while the server runs (`ApiServer.hooks`).
 */
export interface ApiHooks {
  /** Runs before a resource request is served: may wait (latency) or throw a SimApiError (injected failure). */
  beforeRequest?(info: ApiRequestInfo): Promise<void> | void;
  /** Serves paths outside the Kubernetes API (e.g. `/sim/faults`); returns true when it answered the request. */
  extraRoute?(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): boolean | Promise<boolean>;
}

/** What the fault injector may do to a running API server. */
export interface ApiControl {
  /** Ends every open watch connection cleanly; returns how many were open. */
  dropWatches(): number;
  /** Open watch connections. */
  watchCount(): number;
}
