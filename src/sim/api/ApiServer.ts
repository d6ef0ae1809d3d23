import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import type { ApiControl, ApiHooks, ApiVerb, DeleteOptions, KubeObject, ResourceType, WatchableStore } from '../types.js';
import { badRequest, isSimApiError, methodNotAllowed, notFound, SimApiError } from '../store/errors.js';
import { isPlainObject } from '../store/objects.js';
import { apiVersionOf, hasStatus, ResourceRegistry } from '../store/resources.js';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, versionInfo } from './discovery.js';
import { objectJson } from './json.js';
import { listJson, listPage } from './listing.js';
import { openApiForPath, openApiIndex } from './openapi.js';
import { applyJsonPatch } from './patch/jsonPatch.js';
import { trackUpdate, serverSideApply, type WriteContext } from './patch/managedFields.js';
import { applyMergePatch } from './patch/mergePatch.js';
import { applyStrategicMergePatch } from './patch/strategicMerge.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { fromScale, toScale } from './scale.js';
import { TABLE_CONTENT_TYPE, toTable, wantsTable } from './table.js';
import { WatchHub } from './WatchHub.js';

export interface ApiServerOptions {
  store: WatchableStore;
  host?: string;
  port?: number;
  /** How often watchers that asked for bookmarks get one. Kubernetes sends about one a minute. */
  bookmarkIntervalMs?: number;
  hooks?: ApiHooks;
  now?: () => Date;
  /** Largest accepted request body. */
  maxBodyBytes?: number;
  /** Told about requests that failed with a 5xx that the server did not mean (bugs), with the request line. */
  onInternalError?: (error: unknown, request: string) => void;
}

interface ResourceRequest {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  query: URLSearchParams;
}

/** API groups whose kinds are built in (strategic merge patch works); the rest are served like CRDs. */
const BUILT_IN_GROUPS = new Set(['', 'apps', 'batch', 'policy', 'networking.k8s.io', 'coordination.k8s.io', 'rbac.authorization.k8s.io', 'apiextensions.k8s.io']);

const JSON_TYPE = 'application/json';

/**
 * The simulator's Kubernetes HTTP API on node:http: discovery, OpenAPI v3 for kubectl, and get/list/watch/create/
 * update/patch/delete over the store. Plain HTTP on loopback by default; clients need `insecure-skip-tls-verify`.
 */
export class ApiServer implements ApiControl {
  /** Replaceable at run time (fault injection). */
  hooks: ApiHooks;
  private readonly store: WatchableStore;
  private readonly registry: ResourceRegistry;
  private readonly server: Server;
  private readonly watches: WatchHub;
  private readonly now: () => Date;
  private readonly maxBodyBytes: number;
  private readonly host: string;
  private readonly port: number;
  private readonly onInternalError: (error: unknown, request: string) => void;
  private openApiIndexJson: string | undefined;
  private address: AddressInfo | undefined;

  constructor(options: ApiServerOptions) {
    this.store = options.store;
    this.registry = new ResourceRegistry(options.store.resourceTypes());
    this.hooks = options.hooks ?? {};
    this.now = options.now ?? (() => new Date());
    this.maxBodyBytes = options.maxBodyBytes ?? 3 * 1024 * 1024;
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port ?? 0;
    this.onInternalError = options.onInternalError ?? (() => undefined);
    this.watches = new WatchHub(this.store, { bookmarkIntervalMs: options.bookmarkIntervalMs ?? 30_000 });
    this.server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!isSimApiError(error)) this.onInternalError(error, `${req.method} ${req.url}`);
        this.fail(res, error);
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, this.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.address = this.server.address() as AddressInfo;
    return this.url;
  }

  get url(): string {
    if (!this.address) throw new SimApiError(503, 'ServiceUnavailable', 'API server not started');
    return `http://${this.host}:${this.address.port}`;
  }

  async stop(): Promise<void> {
    this.watches.stop();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  dropWatches(): number {
    return this.watches.dropAll();
  }

  watchCount(): number {
    return this.watches.count();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const segments = path.split('/').filter((s) => s.length > 0).map(decodeURIComponent);

    if (segments[0] === 'api' || segments[0] === 'apis') {
      const resource = this.parseResourcePath(segments, url.searchParams);
      if (resource === 'discovery') return this.discovery(res, segments);
      if (resource) return this.serveResource(req, res, resource);
    }
    switch (path) {
      case '/healthz':
      case '/readyz':
      case '/livez':
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
        return;
      case '/version':
        return this.sendJson(res, 200, JSON.stringify(versionInfo()));
      case '/openapi/v3':
        this.openApiIndexJson ??= JSON.stringify(openApiIndex(this.registry));
        return this.sendJson(res, 200, this.openApiIndexJson);
    }
    if (path.startsWith('/openapi/v3/')) {
      const doc = openApiForPath(this.registry, path.slice('/openapi/v3/'.length));
      if (doc) return this.sendJson(res, 200, JSON.stringify(doc));
    }
    if (this.hooks.extraRoute && (await this.hooks.extraRoute(req, res))) return;
    throw new SimApiError(404, 'NotFound', 'the server could not find the requested resource');
  }

  /** 'discovery' for /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>; a ResourceRequest for a resource path. */
  private parseResourcePath(segments: string[], query: URLSearchParams): ResourceRequest | 'discovery' | undefined {
    let group: string;
    let version: string | undefined;
    let rest: string[];
    if (segments[0] === 'api') {
      group = '';
      version = segments[1];
      rest = segments.slice(2);
    } else {
      group = segments[1] ?? '';
      version = segments[2];
      rest = segments.slice(3);
    }
    if (rest.length === 0) return 'discovery';
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status' && rest[2] !== 'finalize') {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const type = this.registry.byGroupPlural(group, rest[0]!);
    if (!type || type.version !== version || rest.length > 3) return undefined;
    if (namespace !== undefined && !type.namespaced) return undefined;
    return { type, namespace, name: rest[1], subresource: rest[2], query };
  }

  private discovery(res: ServerResponse, segments: string[]): void {
    let body: Record<string, unknown> | undefined;
    if (segments[0] === 'api') {
      if (segments.length === 1) body = apiVersions(`${this.host}:${this.address?.port ?? 0}`);
      else if (segments.length === 2) body = apiResourceList(this.registry, '', segments[1]!);
    } else if (segments.length === 1) body = apiGroupList(this.registry);
    else if (segments.length === 2) body = apiGroup(this.registry, segments[1]!);
    else if (segments.length === 3) body = apiResourceList(this.registry, segments[1]!, segments[2]!);
    if (!body) throw new SimApiError(404, 'NotFound', 'the server could not find the requested resource');
    this.sendJson(res, 200, JSON.stringify(body));
  }

  private async serveResource(req: IncomingMessage, res: ServerResponse, r: ResourceRequest): Promise<void> {
    if (r.subresource !== undefined && !r.type.subresources.includes(r.subresource)) {
      throw new SimApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    const verb = this.verbOf(req.method ?? 'GET', r);
    if (this.hooks.beforeRequest) {
      const info: Parameters<NonNullable<ApiHooks['beforeRequest']>>[0] = { verb, resource: r.type };
      if (r.namespace !== undefined) info.namespace = r.namespace;
      if (r.name !== undefined) info.name = r.name;
      if (r.subresource !== undefined) info.subresource = r.subresource;
      await this.hooks.beforeRequest(info);
    }
    if (r.subresource === 'scale') return this.scale(req, res, r, verb);
    const dryRun = r.query.get('dryRun');
    if (dryRun !== null && dryRun !== '') {
      if (dryRun !== 'All') throw badRequest(`unsupported dryRun value "${dryRun}" (only "All")`);
      if (verb === 'create' || verb === 'update' || verb === 'patch' || verb === 'delete') {
        // Read the body first: the store's dry-run scope must stay synchronous.
        const body = await this.readBody(req);
        return this.store.dryRun(() => this.write(verb, req, res, r, body));
      }
    }
    switch (verb) {
      case 'get':
        return this.get(res, r, wantsTable(req.headers.accept));
      case 'list':
        return this.list(res, r, wantsTable(req.headers.accept));
      case 'watch':
        return this.watch(res, r, wantsTable(req.headers.accept));
      case 'create':
      case 'update':
      case 'patch':
      case 'delete':
        return this.write(verb, req, res, r, await this.readBody(req));
    }
  }

  private write(verb: 'create' | 'update' | 'patch' | 'delete', req: IncomingMessage, res: ServerResponse, r: ResourceRequest, body: string): void {
    switch (verb) {
      case 'create':
        return this.create(res, r, body, req);
      case 'update':
        return this.update(res, r, body, req);
      case 'patch':
        return this.patch(res, r, body, req);
      case 'delete':
        return this.delete(res, r, body);
    }
  }

  private verbOf(method: string, r: ResourceRequest): ApiVerb {
    const named = r.name !== undefined;
    switch (method) {
      case 'GET': {
        const watch = r.query.get('watch');
        if (watch === '1' || watch === 'true') return 'watch';
        return named ? 'get' : 'list';
      }
      case 'POST':
        if (!named) return 'create';
        break;
      case 'PUT':
        if (named) return 'update';
        break;
      case 'PATCH':
        if (named) return 'patch';
        break;
      case 'DELETE':
        if (named) return 'delete';
        break;
    }
    throw methodNotAllowed();
  }

  private get(res: ServerResponse, r: ResourceRequest, table: boolean): void {
    const object = this.store.get(r.type, r.namespace, r.name!);
    if (!object) throw notFound(r.type.plural, r.name!, r.type.group);
    if (table) {
      const body = toTable(r.type, [object], { resourceVersion: object.metadata.resourceVersion }, this.now().getTime());
      return this.sendJson(res, 200, JSON.stringify(body), TABLE_CONTENT_TYPE);
    }
    this.sendJson(res, 200, objectJson(object));
  }

  private list(res: ServerResponse, r: ResourceRequest, table: boolean): void {
    const limit = r.query.get('limit');
    const page = listPage(this.store, r.type, {
      namespace: r.namespace,
      label: parseLabelSelector(r.query.get('labelSelector')),
      field: parseFieldSelector(r.query.get('fieldSelector')),
      limit: limit ? Number(limit) : undefined,
      continueToken: r.query.get('continue') ?? undefined,
    });
    if (table) {
      const body = toTable(r.type, page.items, page.metadata, this.now().getTime());
      return this.sendJson(res, 200, JSON.stringify(body), TABLE_CONTENT_TYPE);
    }
    this.sendJson(res, 200, listJson(r.type, page));
  }

  private watch(res: ServerResponse, r: ResourceRequest, table: boolean): void {
    const rv = r.query.get('resourceVersion');
    const field = r.name !== undefined
      ? parseFieldSelector(`metadata.name=${r.name}${r.query.get('fieldSelector') ? `,${r.query.get('fieldSelector')}` : ''}`)
      : parseFieldSelector(r.query.get('fieldSelector'));
    const label = parseLabelSelector(r.query.get('labelSelector'));
    const timeout = r.query.get('timeoutSeconds');
    const bookmarks = r.query.get('allowWatchBookmarks');
    let from: number | undefined;
    if (rv && rv !== '0') {
      from = Number(rv);
      if (!Number.isSafeInteger(from) || from < 0) throw badRequest(`invalid resource version "${rv}"`);
    }
    this.watches.start(
      res,
      {
        type: r.type,
        namespace: r.type.namespaced ? r.namespace : undefined,
        label,
        field,
        bookmarks: bookmarks === 'true' || bookmarks === '1',
        timeoutSeconds: timeout ? Number(timeout) : undefined,
        table,
      },
      from,
    );
  }

  /** The scale subresource: a Scale view over spec.replicas. */
  private async scale(req: IncomingMessage, res: ServerResponse, r: ResourceRequest, verb: ApiVerb): Promise<void> {
    const existing = this.store.get(r.type, r.namespace, r.name!);
    if (!existing) throw notFound(r.type.plural, r.name!, r.type.group);
    if (verb === 'get') return this.sendJson(res, 200, JSON.stringify(toScale(existing)));
    if (verb !== 'update' && verb !== 'patch') throw methodNotAllowed();
    const body = this.parseJson(await this.readBody(req));
    let scale: unknown = body;
    if (verb === 'patch') {
      const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
      const current = toScale(existing);
      if (contentType === 'application/merge-patch+json') scale = applyMergePatch(current, body);
      else if (contentType === 'application/strategic-merge-patch+json') scale = applyStrategicMergePatch(current, body);
      else if (contentType === 'application/json-patch+json') scale = applyJsonPatch(current, body);
      else throw new SimApiError(415, 'UnsupportedMediaType', `the scale subresource does not accept ${contentType}`);
    }
    const next = fromScale(existing, scale);
    const ctx = { ...this.writeContext(r, req, false), scope: 'main' as const };
    const managed = trackUpdate(existing, next, ctx);
    if (managed) next.metadata.managedFields = managed;
    const updated = this.store.update(r.type, next);
    this.sendJson(res, 200, JSON.stringify(toScale(updated)));
  }

  private create(res: ServerResponse, r: ResourceRequest, body: unknown, req: IncomingMessage): void {
    const object = this.objectBody(body, r);
    if (hasStatus(r.type)) {
      if (r.type.group === '' && r.type.plural === 'pods') object.status = { phase: 'Pending' };
      else delete object.status;
    }
    delete object.metadata.managedFields;
    const ctx = this.writeContext(r, req, false);
    const managed = trackUpdate(undefined, object, ctx);
    if (managed) object.metadata.managedFields = managed;
    const created = this.store.create(r.type, object);
    this.sendJson(res, 201, objectJson(created));
  }

  private update(res: ServerResponse, r: ResourceRequest, body: unknown, req: IncomingMessage): void {
    const object = this.objectBody(body, r);
    if (object.metadata.name !== r.name) {
      throw badRequest(`the name of the object (${object.metadata.name}) does not match the name on the URL (${r.name})`);
    }
    const existing = this.store.get(r.type, r.namespace, r.name);
    if (!existing) throw notFound(r.type.plural, r.name, r.type.group);
    this.commitUpdate(res, r, existing, object, this.writeContext(r, req, false));
  }

  private commitUpdate(res: ServerResponse, r: ResourceRequest, existing: KubeObject, next: KubeObject, ctx: WriteContext): void {
    const managed = trackUpdate(existing, next, ctx);
    next.metadata = { ...next.metadata };
    if (managed) next.metadata.managedFields = managed;
    else delete next.metadata.managedFields;
    const updated = this.store.update(r.type, next, r.subresource);
    this.sendJson(res, 200, objectJson(updated));
  }

  private patch(res: ServerResponse, r: ResourceRequest, body: unknown, req: IncomingMessage): void {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
    const existing = this.store.get(r.type, r.namespace, r.name!);
    if (contentType === 'application/apply-patch+yaml') return this.apply(res, r, body, req, existing);
    if (!existing) throw notFound(r.type.plural, r.name!, r.type.group);
    const patch = this.parseJson(body);
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
          throw new SimApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
        }
        patched = applyStrategicMergePatch(existing, patch);
        break;
      default:
        throw new SimApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`);
    }
    if (!isPlainObject(patched) || !isPlainObject(patched.metadata)) throw badRequest('the patch removed the object metadata');
    const next = patched as KubeObject;
    if (next.metadata.name !== r.name) throw badRequest('metadata.name cannot be changed by a patch');
    this.commitUpdate(res, r, existing, next, this.writeContext(r, req, false));
  }

  private apply(res: ServerResponse, r: ResourceRequest, body: unknown, req: IncomingMessage, existing: KubeObject | undefined): void {
    if (!r.query.get('fieldManager')) {
      throw badRequest('PATCH, application/apply-patch+yaml requires fieldManager to be specified');
    }
    let parsed: unknown;
    try {
      parsed = parseYaml(String(body ?? ''));
    } catch (error) {
      throw new SimApiError(400, 'BadRequest', `error decoding YAML: ${(error as Error).message}`, undefined, { cause: error });
    }
    const applied = this.objectBody(parsed, r);
    if (applied.metadata.name !== r.name) throw badRequest('the name of the applied object does not match the name on the URL');
    const force = r.query.get('force') === 'true';
    const ctx = this.writeContext(r, req, true);
    if (existing) {
      const rv = applied.metadata.resourceVersion;
      if (rv && rv !== existing.metadata.resourceVersion) {
        throw new SimApiError(409, 'Conflict', `Operation cannot be fulfilled on ${r.type.plural} "${r.name}": the object has been modified; please apply your changes to the latest version and try again`);
      }
      const next = serverSideApply(r.type, existing, applied, ctx, force);
      const updated = this.store.update(r.type, next, r.subresource);
      return this.sendJson(res, 200, objectJson(updated));
    }
    if (r.subresource) throw notFound(r.type.plural, r.name!, r.type.group);
    const next = serverSideApply(r.type, undefined, applied, ctx, force);
    if (r.type.namespaced) next.metadata.namespace = r.namespace;
    if (hasStatus(r.type)) delete next.status;
    const created = this.store.create(r.type, next);
    this.sendJson(res, 201, objectJson(created));
  }

  private delete(res: ServerResponse, r: ResourceRequest, body: unknown): void {
    const options: DeleteOptions = {};
    const parsed = body === undefined || body === '' ? {} : this.parseJson(body);
    if (isPlainObject(parsed)) {
      if (typeof parsed.gracePeriodSeconds === 'number') options.gracePeriodSeconds = parsed.gracePeriodSeconds;
      if (typeof parsed.propagationPolicy === 'string') options.propagationPolicy = parsed.propagationPolicy as DeleteOptions['propagationPolicy'];
      if (parsed.orphanDependents === true) options.propagationPolicy = 'Orphan';
      if (isPlainObject(parsed.preconditions)) options.preconditions = parsed.preconditions as DeleteOptions['preconditions'];
    }
    const grace = r.query.get('gracePeriodSeconds');
    if (grace !== null && grace !== '') options.gracePeriodSeconds = Number(grace);
    const policy = r.query.get('propagationPolicy');
    if (policy) options.propagationPolicy = policy as DeleteOptions['propagationPolicy'];
    if (r.query.get('orphanDependents') === 'true') options.propagationPolicy = 'Orphan';
    if (options.propagationPolicy && !['Orphan', 'Background', 'Foreground'].includes(options.propagationPolicy)) {
      throw badRequest(`invalid propagationPolicy "${options.propagationPolicy}"`);
    }
    const result = this.store.delete(r.type, r.namespace, r.name!, options);
    const stillThere = this.store.get(r.type, r.namespace, r.name!)?.metadata.uid === result.metadata.uid;
    const returnsObject = stillThere || r.type.plural === 'pods' || !BUILT_IN_GROUPS.has(r.type.group);
    if (returnsObject) return this.sendJson(res, stillThere ? 202 : 200, objectJson(result));
    this.sendJson(res, 200, JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: r.name, group: r.type.group, kind: r.type.plural, uid: result.metadata.uid },
    }));
  }

  /** Parses and checks a request body as an object of the request's type and namespace (a mutable copy). */
  private objectBody(body: unknown, r: ResourceRequest): KubeObject {
    const object = typeof body === 'string' ? this.parseJson(body) : body;
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

  private writeContext(r: ResourceRequest, req: IncomingMessage, apply: boolean): WriteContext {
    const agent = req.headers['user-agent'];
    const manager = r.query.get('fieldManager') ?? (agent ? agent.split('/')[0]! : 'unknown');
    if (apply && !manager) throw badRequest('fieldManager is required for apply');
    const subresource = r.subresource ?? '';
    return {
      manager,
      apiVersion: apiVersionOf(r.type),
      subresource,
      now: this.now().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      scope: subresource === 'status' ? 'status' : hasStatus(r.type) ? 'main' : 'all',
    };
  }

  private parseJson(body: unknown): unknown {
    if (typeof body !== 'string') return body;
    try {
      return JSON.parse(body);
    } catch (error) {
      throw new SimApiError(400, 'BadRequest', `error decoding JSON body: ${(error as Error).message}`, undefined, { cause: error });
    }
  }

  private readBody(req: IncomingMessage): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > this.maxBodyBytes) {
          reject(new SimApiError(413, 'BadRequest', 'request entity too large'));
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });
  }

  private sendJson(res: ServerResponse, code: number, json: string, contentType = JSON_TYPE): void {
    res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(json) });
    res.end(json);
  }

  private fail(res: ServerResponse, error: unknown): void {
    const apiError = isSimApiError(error)
      ? error
      : new SimApiError(500, 'InternalError', `Internal error occurred: ${(error as Error)?.message ?? String(error)}`, undefined, { cause: error });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.sendJson(res, apiError.code, JSON.stringify(apiError.toStatus()));
  }
}
