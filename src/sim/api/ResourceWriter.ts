import { parse as parseYaml } from 'yaml';
import type { DeleteOptions, KubeObject, WatchableStore, WriteOptions } from '../types.js';
import { badRequest, conflict, notFound, SimApiError } from '../store/errors.js';
import { isPlainObject } from '../store/objects.js';
import { apiVersionOf, hasStatus } from '../store/resources.js';
import { objectJson } from './json.js';
import { applyJsonPatch } from './patch/jsonPatch.js';
import { serverSideApply, trackUpdate, type WriteContext } from './patch/managedFields.js';
import { applyMergePatch } from './patch/mergePatch.js';
import { applyStrategicMergePatch } from './patch/strategicMerge.js';
import type { ResourceRequest } from './request.js';
import { fromScale, toScale } from './scale.js';

/** One write request, its body unparsed. */
export interface WriteInput {
  r: ResourceRequest;
  body: string;
  /** Media type of the body (decides the patch flavour). */
  contentType: string;
  /** Field manager for managedFields (already defaulted from the User-Agent). */
  manager: string;
}

export interface WriteResult {
  code: number;
  json: string;
  /** Sent as `Warning` headers. */
  warnings?: string[];
}

/** API groups whose kinds are built in (strategic merge patch works); the rest are served like CRDs. */
const BUILT_IN_GROUPS = new Set([
  '',
  'apps',
  'batch',
  'policy',
  'networking.k8s.io',
  'coordination.k8s.io',
  'rbac.authorization.k8s.io',
  'apiextensions.k8s.io',
]);

const PATCH_TYPES = 'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json';

/**
 * The write verbs of the API (create, update, patch in its four flavours, delete, and the scale subresource) on top of
 * the store: request-body checks, the status-subresource rules, and managedFields bookkeeping. Synchronous from body
 * to store, so a dry run can wrap a whole call.
 */
export class ResourceWriter {
  constructor(
    private readonly store: WatchableStore,
    private readonly now: () => Date,
  ) {}

  create({ r, body, manager }: WriteInput): WriteResult {
    const object = objectBody(parseJson(body), r);
    if (object.metadata.resourceVersion) throw badRequest('resourceVersion should not be set on objects to be created');
    if (hasStatus(r.type)) {
      // As the real strategies: a new pod starts Pending, other kinds start with no status.
      if (r.type.group === '' && r.type.plural === 'pods') object.status = { phase: 'Pending' };
      else delete object.status;
    }
    delete object.metadata.managedFields;
    const managed = trackUpdate(undefined, object, this.context(r, manager));
    if (managed) object.metadata.managedFields = managed;
    const fields = unknownFields(r, 'decode');
    // Parsed from this request's body above: nothing else holds it, the store may keep it as it is.
    return fields.result(201, this.store.create(r.type, object, { ...fields.options, handOver: true }));
  }

  update({ r, body, manager }: WriteInput): WriteResult {
    const object = objectBody(parseJson(body), r);
    if (object.metadata.name !== r.name) {
      throw badRequest(`the name of the object (${object.metadata.name}) does not match the name on the URL (${r.name})`);
    }
    return this.commitUpdate(r, this.existing(r), object, this.context(r, manager), 'decode');
  }

  patch(input: WriteInput): WriteResult {
    const { r, body, contentType, manager } = input;
    if (contentType === 'application/apply-patch+yaml') return this.apply(input);
    const existing = this.existing(r);
    const patch = parseJson(body);
    let patched: unknown;
    switch (contentType) {
      case 'application/merge-patch+json':
        patched = applyMergePatch(existing, patch);
        break;
      case 'application/json-patch+json':
        patched = applyJsonPatch(existing, patch);
        break;
      case 'application/strategic-merge-patch+json':
        if (!BUILT_IN_GROUPS.has(r.type.group)) {
          throw new SimApiError(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.replace(', application/strategic-merge-patch+json', '')}`,
          );
        }
        patched = applyStrategicMergePatch(existing, patch);
        break;
      default:
        throw new SimApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES}`);
    }
    if (!isPlainObject(patched) || !isPlainObject(patched.metadata)) throw badRequest('the patch removed the object metadata');
    const next = patched as KubeObject;
    if (next.metadata.name !== r.name) throw badRequest('metadata.name cannot be changed by a patch');
    return this.commitUpdate(r, existing, next, this.context(r, manager), 'patch');
  }

  delete({ r, body }: WriteInput): WriteResult {
    const options = deleteOptions(body === '' ? {} : parseJson(body), r.query);
    const result = this.store.delete(r.type, r.namespace, r.name!, options);
    const stillThere = this.store.get(r.type, r.namespace, r.name!)?.metadata.uid === result.metadata.uid;
    // Kubernetes answers with the object for pods, custom resources and pending deletions, with a Status otherwise.
    if (stillThere || r.type.plural === 'pods' || !BUILT_IN_GROUPS.has(r.type.group)) {
      return { code: stillThere ? 202 : 200, json: objectJson(result) };
    }
    const status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: r.name, group: r.type.group, kind: r.type.plural, uid: result.metadata.uid },
    };
    return { code: 200, json: JSON.stringify(status) };
  }

  /** The scale subresource: an autoscaling/v1 Scale view over spec.replicas (get, update, patch). */
  scale(verb: 'get' | 'update' | 'patch', { r, body, contentType, manager }: WriteInput): WriteResult {
    const existing = this.existing(r);
    if (verb === 'get') return { code: 200, json: JSON.stringify(toScale(existing)) };
    const parsed = parseJson(body);
    let scale: unknown = parsed;
    if (verb === 'patch') {
      const current = toScale(existing);
      if (contentType === 'application/merge-patch+json') scale = applyMergePatch(current, parsed);
      else if (contentType === 'application/strategic-merge-patch+json') scale = applyStrategicMergePatch(current, parsed);
      else if (contentType === 'application/json-patch+json') scale = applyJsonPatch(current, parsed);
      else throw new SimApiError(415, 'UnsupportedMediaType', `the scale subresource does not accept ${contentType}`);
    }
    const next = fromScale(existing, scale);
    const managed = trackUpdate(existing, next, { ...this.context(r, manager), scope: 'main' });
    if (managed) next.metadata.managedFields = managed;
    return { code: 200, json: JSON.stringify(toScale(this.store.update(r.type, next))) };
  }

  private apply({ r, body, manager }: WriteInput): WriteResult {
    if (!r.query.get('fieldManager')) throw badRequest('PATCH, application/apply-patch+yaml requires fieldManager to be specified');
    const parsed = parseApplyBody(body);
    const applied = objectBody(parsed, r);
    if (applied.metadata.name !== r.name) throw badRequest('the name of the applied object does not match the name on the URL');
    const force = r.query.get('force') === 'true';
    const ctx = this.context(r, manager);
    const existing = this.store.get(r.type, r.namespace, r.name!);
    if (existing) {
      const rv = applied.metadata.resourceVersion;
      if (rv && rv !== existing.metadata.resourceVersion) {
        throw conflict(r.type.plural, r.name!, 'the object has been modified; please apply your changes to the latest version and try again', r.type.group);
      }
      const next = serverSideApply(r.type, existing, applied, ctx, force);
      const fields = unknownFields(r, 'apply');
      return fields.result(200, this.store.update(r.type, next, r.subresource, fields.options));
    }
    if (r.subresource) throw notFound(r.type.plural, r.name!, r.type.group);
    const next = serverSideApply(r.type, undefined, applied, ctx, force);
    if (r.type.namespaced) next.metadata.namespace = r.namespace;
    if (hasStatus(r.type)) delete next.status;
    const fields = unknownFields(r, 'apply');
    return fields.result(201, this.store.create(r.type, next, fields.options));
  }

  private commitUpdate(r: ResourceRequest, existing: KubeObject, next: KubeObject, ctx: WriteContext, how: 'decode' | 'patch'): WriteResult {
    const managed = trackUpdate(existing, next, ctx);
    next.metadata = { ...next.metadata };
    if (managed) next.metadata.managedFields = managed;
    else delete next.metadata.managedFields;
    const fields = unknownFields(r, how);
    // A decoded body was parsed from this request alone; a patched one is fresh where the patch changed it (and at its
    // root and metadata) and shares the stored version's immutable parts elsewhere: both may be kept as they are.
    return fields.result(200, this.store.update(r.type, next, r.subresource, { ...fields.options, handOver: true }));
  }

  private existing(r: ResourceRequest): KubeObject {
    const existing = this.store.get(r.type, r.namespace, r.name!);
    if (!existing) throw notFound(r.type.plural, r.name!, r.type.group);
    return existing;
  }

  private context(r: ResourceRequest, manager: string): WriteContext {
    const subresource = r.subresource ?? '';
    return {
      manager,
      apiVersion: apiVersionOf(r.type),
      subresource,
      now: this.now()
        .toISOString()
        .replace(/\.\d{3}Z$/, 'Z'),
      scope: subresource === 'status' ? 'status' : hasStatus(r.type) ? 'main' : 'all',
    };
  }
}

/**
 * `?fieldValidation=` for the fields a custom resource's schema prunes: Strict refuses the write with kube-apiserver's
 * 400 (its wording differs between decoding a body, a patch, and server-side apply), Warn (the default) prunes them
 * and says so in `Warning` headers, Ignore prunes them silently. Built-in kinds are not pruned here.
 */
function unknownFields(
  r: ResourceRequest,
  how: 'decode' | 'patch' | 'apply',
): { options: WriteOptions; result: (code: number, object: KubeObject) => WriteResult } {
  const directive = r.query.get('fieldValidation') || 'Warn';
  if (directive !== 'Strict' && directive !== 'Warn' && directive !== 'Ignore') {
    throw badRequest(`fieldValidation: Unsupported value: "${directive}": supported values: "Ignore", "Strict", "Warn"`);
  }
  const warnings: string[] = [];
  const { kind, version, group } = r.type;
  const options: WriteOptions = {
    onUnknownFields(paths) {
      if (directive === 'Ignore') return;
      if (directive === 'Warn') {
        for (const path of paths) warnings.push(`unknown field "${path}"`);
        return;
      }
      const list = paths.map((p) => `unknown field "${p}"`).join(', ');
      if (how === 'apply') {
        const where = r.namespace ? `${r.namespace}/${r.name}` : `${r.name}`;
        throw badRequest(
          `failed to create typed patch object (${where}; ${group}/${version}, Kind=${kind}): ${paths.map((p) => `.${p}: field not declared in schema`).join(', ')}`,
        );
      }
      if (how === 'patch') throw badRequest(`strict decoding error: ${list}`);
      throw badRequest(`${kind} in version "${version}" cannot be handled as a ${kind}: strict decoding error: ${list}`);
    },
  };
  return {
    options,
    result: (code, object) => (warnings.length > 0 ? { code, json: objectJson(object), warnings } : { code, json: objectJson(object) }),
  };
}

/** An apply body is YAML, and clients mostly send its JSON subset: JSON.parse is far cheaper, so it goes first. */
function parseApplyBody(body: string): unknown {
  if (body.trimStart().startsWith('{')) {
    try {
      return JSON.parse(body);
    } catch {
      // not JSON after all: YAML flow style
    }
  }
  try {
    return parseYaml(body);
  } catch (error) {
    throw new SimApiError(400, 'BadRequest', `error decoding YAML: ${(error as Error).message}`, undefined, { cause: error });
  }
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch (error) {
    throw new SimApiError(400, 'BadRequest', `error decoding JSON body: ${(error as Error).message}`, undefined, { cause: error });
  }
}

/** Checks a parsed body as an object of the request's type and namespace; returns it with a copied metadata. */
function objectBody(object: unknown, r: ResourceRequest): KubeObject {
  if (!isPlainObject(object)) throw badRequest('the request body is not a Kubernetes object');
  const apiVersion = apiVersionOf(r.type);
  if (object.apiVersion !== undefined && object.apiVersion !== apiVersion) {
    throw badRequest(`the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${apiVersion})`);
  }
  if (object.kind !== undefined && object.kind !== r.type.kind) {
    throw badRequest(`the kind in the data (${String(object.kind)}) does not match the expected kind (${r.type.kind})`);
  }
  object.apiVersion = apiVersion;
  object.kind = r.type.kind;
  const metadata = isPlainObject(object.metadata) ? { ...object.metadata } : {};
  if (r.type.namespaced) {
    if (metadata.namespace !== undefined && metadata.namespace !== '' && metadata.namespace !== r.namespace) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    if (r.namespace === undefined) throw badRequest(`${r.type.plural} is namespaced: the request needs a namespace`);
    metadata.namespace = r.namespace;
  } else {
    delete metadata.namespace;
  }
  object.metadata = metadata;
  return object as KubeObject;
}

/** DeleteOptions from the body and the query (the query wins, as client-node sends both). */
function deleteOptions(body: unknown, query: URLSearchParams): DeleteOptions {
  const options: DeleteOptions = {};
  if (isPlainObject(body)) {
    if (typeof body.gracePeriodSeconds === 'number') options.gracePeriodSeconds = body.gracePeriodSeconds;
    if (typeof body.propagationPolicy === 'string') options.propagationPolicy = body.propagationPolicy as DeleteOptions['propagationPolicy'];
    if (body.orphanDependents === true) options.propagationPolicy = 'Orphan';
    if (isPlainObject(body.preconditions)) options.preconditions = body.preconditions as DeleteOptions['preconditions'];
  }
  const grace = query.get('gracePeriodSeconds');
  if (grace !== null && grace !== '') {
    const seconds = Number(grace);
    if (!Number.isInteger(seconds)) throw badRequest(`invalid gracePeriodSeconds "${grace}"`);
    options.gracePeriodSeconds = seconds;
  }
  const policy = query.get('propagationPolicy');
  if (policy) options.propagationPolicy = policy as DeleteOptions['propagationPolicy'];
  if (query.get('orphanDependents') === 'true') options.propagationPolicy = 'Orphan';
  if (options.propagationPolicy && !['Orphan', 'Background', 'Foreground'].includes(options.propagationPolicy)) {
    throw badRequest(`invalid propagationPolicy "${options.propagationPolicy}"`);
  }
  return options;
}
