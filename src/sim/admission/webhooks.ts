/**
 * Validating admission webhooks, as kube-apiserver calls them (kubernetes `staging/src/k8s.io/apiserver/pkg/admission/
 * plugin/webhook`: `validating/dispatcher.go`, `generic/webhook.go` for the rule and selector match, `errors/
 * statuserror.go` for a denial's wording; the service resolver of `pkg/util/proxy` for "no endpoints"). Every
 * ValidatingWebhookConfiguration in the store is read on each write; a webhook whose rules match is called on the
 * in-process server registered for its Service, reached only through that Service's Ready endpoints:
 * - the Service missing, without a Ready pod behind it, without the port, or no server listening: a call error;
 * - a server that hangs: `context deadline exceeded` after `timeoutSeconds` (default 10, reported at once);
 * - a call error fails the write with 500 InternalError under `failurePolicy: Fail` (v1's default) and is ignored
 *   under `Ignore`; a denial always fails it, with the webhook's own code and message;
 * - dry runs call the webhooks too (v1 requires `sideEffects` None or NoneOnDryRun, which allow it).
 * Not modelled: mutating webhooks, `url` client configs (a call error: the simulator reaches only Services),
 * `matchPolicy` Equivalent conversions, `matchConditions`, reinvocation, the webhook's TLS (caBundle is not checked).
 */
import { SimApiError } from '../store/errors.js';
import { Resources } from '../store/resources.js';
import type { KubeObject, ObjectStore, ResourceType } from '../types.js';
import type { AdmissionOperation } from './types.js';

/** What a webhook server receives: the fields of `admission.k8s.io/v1 AdmissionRequest` the simulated servers read. */
export interface WebhookReview {
  uid: string;
  /** The path the webhook configuration names (`clientConfig.service.path`). */
  path: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name: string;
  namespace?: string;
  operation: AdmissionOperation;
  /** CREATE/UPDATE: the object as it would be stored. */
  object?: KubeObject;
  /** UPDATE/DELETE: the stored object. */
  oldObject?: KubeObject;
  dryRun: boolean;
}

/** A server's answer: `admission.k8s.io/v1 AdmissionResponse` (allowed, status), or a failure to answer. */
export type WebhookAnswer =
  | { allowed: true }
  | { allowed: false; status?: { code?: number; reason?: string; message?: string } }
  /** The server does not answer within the webhook's timeout. */
  | { hang: true };

export type WebhookServer = (review: WebhookReview) => WebhookAnswer;

/**
 * The webhook servers listening behind Services (a simulated program registers one while it runs): `namespace/service`
 * → server. A Service with Ready endpoints but no server registered refuses the connection.
 */
export class WebhookServers {
  private readonly servers = new Map<string, WebhookServer>();

  /** Starts serving behind `namespace/service`; the returned function stops it. */
  serve(namespace: string, service: string, server: WebhookServer): () => void {
    const key = `${namespace}/${service}`;
    this.servers.set(key, server);
    return () => {
      if (this.servers.get(key) === server) this.servers.delete(key);
    };
  }

  serverFor(namespace: string, service: string): WebhookServer | undefined {
    return this.servers.get(`${namespace}/${service}`);
  }
}

export const VALIDATING_WEBHOOK_CONFIGURATIONS = Resources.validatingwebhookconfigurations;

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

interface Rule {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

interface ValidatingWebhook {
  name: string;
  clientConfig?: { url?: string; service?: { namespace?: string; name?: string; path?: string; port?: number } };
  rules?: Rule[];
  failurePolicy?: string;
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  timeoutSeconds?: number;
}

/** The write being admitted, as the store sees it. */
export interface WebhookAttributes {
  operation: AdmissionOperation;
  type: ResourceType;
  subresource?: string;
  /** CREATE/UPDATE: the object about to be stored. */
  object?: KubeObject;
  /** UPDATE/DELETE: the stored object. */
  old?: KubeObject;
  dryRun: boolean;
}

let reviewCounter = 0;

/** Calls the matching validating webhooks of every configuration, in name order; throws the first refusal. */
export function callValidatingWebhooks(store: Pick<ObjectStore, 'get' | 'list'>, servers: WebhookServers, attributes: WebhookAttributes): void {
  // Configurations are written rarely and read on every write: an empty list costs one map lookup.
  const configurations = store.list(VALIDATING_WEBHOOK_CONFIGURATIONS);
  if (configurations.length === 0) return;
  if (attributes.type === VALIDATING_WEBHOOK_CONFIGURATIONS || attributes.type.plural === 'mutatingwebhookconfigurations') return; // never intercepted upstream
  const sorted = [...configurations].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  for (const configuration of sorted) {
    for (const webhook of (configuration.webhooks ?? []) as ValidatingWebhook[]) {
      if (!matches(store, webhook, attributes)) continue;
      const failure = call(store, servers, webhook, attributes);
      if (failure) throw failure;
    }
  }
}

function matches(store: Pick<ObjectStore, 'get'>, webhook: ValidatingWebhook, a: WebhookAttributes): boolean {
  const resource = a.subresource ? `${a.type.plural}/${a.subresource}` : a.type.plural;
  const ruleMatches = (rule: Rule) =>
    anyOf(rule.operations, a.operation) &&
    anyOf(rule.apiGroups, a.type.group) &&
    anyOf(rule.apiVersions, a.type.version) &&
    resourceMatches(rule.resources ?? [], resource) &&
    scopeMatches(rule.scope ?? '*', a.type.namespaced);
  if (!(webhook.rules ?? []).some(ruleMatches)) return false;
  const object = a.object ?? a.old;
  if (
    webhook.objectSelector &&
    !selects(webhook.objectSelector, object?.metadata.labels ?? {}) &&
    !selects(webhook.objectSelector, a.old?.metadata.labels ?? {})
  )
    return false;
  if (webhook.namespaceSelector && a.type.namespaced && object?.metadata.namespace) {
    const namespace = store.get(Resources.namespaces, undefined, object.metadata.namespace);
    if (!selects(webhook.namespaceSelector, namespace?.metadata.labels ?? {})) return false;
  }
  return true;
}

const anyOf = (listed: string[] | undefined, value: string) => (listed ?? []).some((v) => v === '*' || v === value);

/** `resource`, `resource/sub`, `*` (every resource, no subresource), `*\/*`, `resource/*`, `*\/sub`. */
function resourceMatches(listed: string[], resource: string): boolean {
  const [res, sub] = resource.split('/');
  return listed.some((entry) => {
    if (entry === '*/*') return true;
    const [r, s] = entry.split('/');
    if (s === undefined) return sub === undefined && (r === '*' || r === res);
    return (r === '*' || r === res) && (s === '*' || s === sub);
  });
}

function scopeMatches(scope: string, namespaced: boolean): boolean {
  return scope === '*' || (scope === 'Namespaced' ? namespaced : !namespaced);
}

function selects(selector: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const inValues = has && (e.values ?? []).includes(labels[e.key]!);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** One call; undefined when the webhook allows the write (or its call failed and failurePolicy is Ignore). */
function call(store: Pick<ObjectStore, 'get' | 'list'>, servers: WebhookServers, webhook: ValidatingWebhook, a: WebhookAttributes): SimApiError | undefined {
  const timeout = webhook.timeoutSeconds ?? 10;
  const service = webhook.clientConfig?.service;
  const port = service?.port ?? 443;
  const url = service
    ? `https://${service.name}.${service.namespace}.svc:${port}${service.path ?? ''}?timeout=${timeout}s`
    : `${webhook.clientConfig?.url ?? ''}?timeout=${timeout}s`;
  let answer: WebhookAnswer | undefined;
  let callError: string | undefined;
  if (!service?.name || !service.namespace) {
    callError = 'the rollplane simulator reaches webhooks only through a Service';
  } else {
    const reached = reach(store, service.namespace, service.name, port);
    if (reached) callError = reached;
    else {
      const server = servers.serverFor(service.namespace, service.name);
      if (!server) callError = `dial tcp ${clusterIpOf(store, service.namespace, service.name)}:${port}: connect: connection refused`;
      else {
        answer = server(review(a, service.path ?? ''));
        if ('hang' in answer) callError = 'context deadline exceeded';
      }
    }
  }
  if (callError !== undefined) {
    // ErrCallingWebhook: failing open under Ignore, closed (an internal error) under Fail.
    if (webhook.failurePolicy === 'Ignore') return undefined;
    const reason = `failed calling webhook "${webhook.name}": failed to call webhook: Post "${url}": ${callError}`;
    return new SimApiError(500, 'InternalError', `Internal error occurred: ${reason}`, { causes: [{ message: reason }] });
  }
  if (!answer || ('allowed' in answer && answer.allowed)) return undefined;
  return denial(webhook.name, (answer as { status?: { code?: number; reason?: string; message?: string } }).status);
}

/** Why the Service cannot be reached (the apiserver's service resolver), or undefined when a Ready endpoint serves it. */
function reach(store: Pick<ObjectStore, 'get' | 'list'>, namespace: string, name: string, port: number): string | undefined {
  const svc = store.get(Resources.services, namespace, name);
  if (!svc) return `service "${name}" not found`;
  const ports = (svc.spec?.ports ?? []) as { port?: number }[];
  if (!ports.some((p) => p.port === port)) return `no service port ${port} found for service "${name}"`;
  const selector = (svc.spec?.selector ?? {}) as Record<string, string>;
  // The EndpointSlice controller's view: Ready pods, not terminating, whose labels the selector matches.
  if (Object.keys(selector).length === 0) return `no endpoints available for service "${name}"`;
  // Whether one exists, not which: the endpoint found last time, while it still is one, answers without a scan of
  // every pod in the namespace (there the vm-dhcp agents live: a scan per IPPool write was quadratic in pools).
  let found = lastEndpoint.get(store);
  if (!found) {
    found = new Map();
    lastEndpoint.set(store, found);
  }
  const key = `${namespace}/${name}`;
  const last = found.get(key);
  const lastPod = last === undefined ? undefined : store.get(Resources.pods, namespace, last);
  if (lastPod && isReadyEndpoint(lastPod, selector)) return undefined;
  const endpoint = store.list(Resources.pods, namespace).find((pod) => isReadyEndpoint(pod, selector));
  if (endpoint) {
    found.set(key, endpoint.metadata.name);
    return undefined;
  }
  found.delete(key);
  return `no endpoints available for service "${name}"`;
}

/** store → `namespace/service` → the name of the pod last found serving it (see `reach`). */
const lastEndpoint = new WeakMap<object, Map<string, string>>();

function isReadyEndpoint(pod: KubeObject, selector: Record<string, string>): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const labels = pod.metadata.labels ?? {};
  for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  return ((pod.status?.conditions ?? []) as { type: string; status: string }[]).some((c) => c.type === 'Ready' && c.status === 'True');
}

function clusterIpOf(store: Pick<ObjectStore, 'get'>, namespace: string, name: string): string {
  return String(store.get(Resources.services, namespace, name)?.spec?.clusterIP ?? '10.53.0.1');
}

function review(a: WebhookAttributes, path: string): WebhookReview {
  const object = a.object ?? a.old!;
  return {
    uid: `sim-review-${++reviewCounter}`,
    path,
    kind: { group: a.type.group, version: a.type.version, kind: a.type.kind },
    resource: { group: a.type.group, version: a.type.version, resource: a.type.plural },
    ...(a.subresource ? { subResource: a.subresource } : {}),
    name: object.metadata.name,
    ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
    operation: a.operation,
    ...(a.operation !== 'DELETE' && a.object ? { object: a.object } : {}),
    ...(a.old ? { oldObject: a.old } : {}),
    dryRun: a.dryRun,
  };
}

/**
 * `webhookerrors.ToStatusErr`: "admission webhook "<name>" denied the request: <message>" with the webhook's own code
 * (at least 400) and reason.
 */
function denial(name: string, status: { code?: number; reason?: string; message?: string } | undefined): SimApiError {
  const deniedBy = `admission webhook "${name}" denied the request`;
  const code = status?.code !== undefined && status.code >= 400 ? status.code : 400;
  const message = status?.message ? `${deniedBy}: ${status.message}` : status?.reason ? `${deniedBy}: ${status.reason}` : `${deniedBy} without explanation`;
  return new SimApiError(code, (status?.reason as SimApiError['reason']) || 'BadRequest', message);
}
