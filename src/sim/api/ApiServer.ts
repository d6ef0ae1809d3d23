import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiControl, ApiHooks, ApiRequestInfo, ApiVerb, WatchableStore } from '../types.js';
import { badRequest, isSimApiError, methodNotAllowed, notFound, SimApiError } from '../store/errors.js';
import type { ResourceRegistry } from '../store/resources.js';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, versionInfo } from './discovery.js';
import { objectJson } from './json.js';
import { listJson, listPage } from './listing.js';
import { openApiForPath, openApiIndex } from './openapi.js';
import { contentTypeOf, managerOf, parseApiPath, readBody, verbOf, type ResourceRequest } from './request.js';
import { ResourceWriter, type WriteInput, type WriteResult } from './ResourceWriter.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { TABLE_CONTENT_TYPE, toTable, wantsTable } from './table.js';
import { WatchHub } from './WatchHub.js';

/** One write through the API (not the simulated controllers' own, which go to the store directly). */
export interface AuditRecord {
  /** Increases across every simulator of the process: orders writes to different simulated clusters. */
  seq: number;
  at: number;
  verb: 'create' | 'update' | 'patch' | 'delete';
  /** `ippools`, `ippools/status`, … */
  resource: string;
  namespace: string | null;
  name: string | null;
  userAgent: string;
  /** A Lease's holderIdentity after the write. */
  holder?: string;
}

/** Writes kept in the audit (the oldest go first). */
const AUDIT_CAP = 200_000;
let auditSeq = 0;

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

const JSON_TYPE = 'application/json';
const NOT_FOUND = 'the server could not find the requested resource';

/**
 * The simulator's Kubernetes HTTP API on node:http: discovery, OpenAPI v3 for kubectl, health, and get/list/watch
 * here plus the write verbs in ResourceWriter, over the store. Plain HTTP on loopback by default; clients need
 * `insecure-skip-tls-verify`.
 */
/**
 * How long an idle kept-alive connection stays open (kube-apiserver keeps its own far longer than Node's default 5 s).
 * A client that keeps idle connections must close its own before this (the front door's agent does: clusterFrontDoor.ts).
 */
export const API_SERVER_KEEP_ALIVE_MS = 65_000;

export class ApiServer implements ApiControl {
  /** Replaceable at run time (fault injection). */
  hooks: ApiHooks;
  /** The writes made through the API, in order (AuditRecord): which client (User-Agent) changed what, and when. */
  readonly audit: AuditRecord[] = [];
  private readonly store: WatchableStore;
  private readonly registry: ResourceRegistry;
  private readonly server: Server;
  private readonly watches: WatchHub;
  private readonly writer: ResourceWriter;
  private readonly now: () => Date;
  private readonly maxBodyBytes: number;
  private readonly host: string;
  private readonly port: number;
  private readonly onInternalError: (error: unknown, request: string) => void;
  private openApiIndex: { generation: number; json: string } | undefined;
  private address: AddressInfo | undefined;

  constructor(options: ApiServerOptions) {
    this.store = options.store;
    this.registry = options.store.registry;
    this.hooks = options.hooks ?? {};
    this.now = options.now ?? (() => new Date());
    this.maxBodyBytes = options.maxBodyBytes ?? 3 * 1024 * 1024;
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port ?? 0;
    this.onInternalError = options.onInternalError ?? (() => undefined);
    this.watches = new WatchHub(this.store, { bookmarkIntervalMs: options.bookmarkIntervalMs ?? 30_000 });
    this.writer = new ResourceWriter(this.store, this.now);
    this.server = createServer({ keepAliveTimeout: API_SERVER_KEEP_ALIVE_MS }, (req, res) => {
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
    const segments = path
      .split('/')
      .filter((s) => s.length > 0)
      .map(decodeURIComponent);

    if (segments[0] === 'api' || segments[0] === 'apis') {
      const resource = parseApiPath(this.registry, segments, url.searchParams);
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
        return this.send(res, 200, JSON.stringify(versionInfo()));
      case '/openapi/v3':
        // Rebuilt when a CRD is installed, changed or deleted.
        if (this.openApiIndex?.generation !== this.registry.generation) {
          this.openApiIndex = { generation: this.registry.generation, json: JSON.stringify(openApiIndex(this.registry)) };
        }
        return this.send(res, 200, this.openApiIndex.json);
    }
    if (path.startsWith('/openapi/v3/')) {
      const doc = openApiForPath(this.registry, path.slice('/openapi/v3/'.length));
      if (doc) return this.send(res, 200, JSON.stringify(doc));
    }
    if (this.hooks.extraRoute && (await this.hooks.extraRoute(req, res))) return;
    throw new SimApiError(404, 'NotFound', NOT_FOUND);
  }

  private discovery(res: ServerResponse, segments: string[]): void {
    let body: Record<string, unknown> | undefined;
    if (segments[0] === 'api') {
      if (segments.length === 1) body = apiVersions(`${this.host}:${this.address?.port ?? 0}`);
      else if (segments.length === 2) body = apiResourceList(this.registry, '', segments[1]!);
    } else if (segments.length === 1) body = apiGroupList(this.registry);
    else if (segments.length === 2) body = apiGroup(this.registry, segments[1]!);
    else if (segments.length === 3) body = apiResourceList(this.registry, segments[1]!, segments[2]!);
    if (!body) throw new SimApiError(404, 'NotFound', NOT_FOUND);
    this.send(res, 200, JSON.stringify(body));
  }

  private async serveResource(req: IncomingMessage, res: ServerResponse, r: ResourceRequest): Promise<void> {
    if (r.subresource !== undefined && !r.type.subresources.includes(r.subresource)) {
      throw new SimApiError(404, 'NotFound', NOT_FOUND);
    }
    const verb = verbOf(req.method ?? 'GET', r);
    // As kube-apiserver: every request through a deprecated CRD version carries the version's warning.
    if (r.type.deprecationWarning) addWarnings(res, [r.type.deprecationWarning]);
    if (this.hooks.beforeRequest) await this.hooks.beforeRequest(requestInfo(verb, r));
    const table = wantsTable(req.headers.accept);
    switch (verb) {
      case 'get':
        if (r.subresource === 'log') return this.log(res, r);
        if (r.subresource === 'scale') return this.sendResult(res, this.writer.scale('get', await this.writeInput(req, r)));
        return this.get(res, r, table);
      case 'list':
        return this.list(res, r, table);
      case 'watch':
        return this.watch(res, r, table);
      case 'create':
      case 'update':
      case 'patch':
      case 'delete':
        return this.write(verb, await this.writeInput(req, r), res, req.headers['user-agent'] ?? '');
    }
  }

  /** A write, all synchronous once the body is in, so that `dryRun=All` can wrap it in the store's dry-run scope. */
  private write(verb: 'create' | 'update' | 'patch' | 'delete', input: WriteInput, res: ServerResponse, userAgent: string): void {
    const run = (): WriteResult => {
      if (input.r.subresource === 'scale') {
        if (verb !== 'update' && verb !== 'patch') throw methodNotAllowed();
        return this.writer.scale(verb, input);
      }
      switch (verb) {
        case 'create':
          return this.writer.create(input);
        case 'update':
          return this.writer.update(input);
        case 'patch':
          return this.writer.patch(input);
        case 'delete':
          return this.writer.delete(input);
      }
    };
    const dryRun = input.r.query.get('dryRun');
    if (dryRun === null || dryRun === '') {
      const result = run();
      if (result.code < 300) this.audited(verb, input, userAgent, result);
      this.sendResult(res, result);
      return;
    }
    if (dryRun !== 'All') throw badRequest(`unsupported dryRun value "${dryRun}" (only "All")`);
    this.sendResult(res, this.store.dryRun(run));
  }

  /** Notes a write that changed something (a dry run changes nothing), as kube-apiserver's audit log would. */
  private audited(verb: AuditRecord['verb'], input: WriteInput, userAgent: string, result: WriteResult): void {
    const { r } = input;
    // A create names its object in the body, not the path; a Lease's holder is what it says after the write.
    const object =
      r.name === undefined || r.type.plural === 'leases'
        ? (JSON.parse(result.json) as { metadata?: { name?: string }; spec?: { holderIdentity?: string } })
        : undefined;
    const holder = r.type.plural === 'leases' ? (object?.spec?.holderIdentity ?? '') : undefined;
    if (this.audit.length >= AUDIT_CAP) this.audit.splice(0, this.audit.length - AUDIT_CAP + 1);
    this.audit.push({
      seq: ++auditSeq,
      at: Date.now(),
      verb,
      resource: r.subresource ? `${r.type.plural}/${r.subresource}` : r.type.plural,
      namespace: r.namespace ?? null,
      name: r.name ?? object?.metadata?.name ?? null,
      userAgent,
      ...(holder !== undefined ? { holder } : {}),
    });
  }

  private async writeInput(req: IncomingMessage, r: ResourceRequest): Promise<WriteInput> {
    return { r, body: await readBody(req, this.maxBodyBytes), contentType: contentTypeOf(req), manager: managerOf(req, r.query) };
  }

  private get(res: ServerResponse, r: ResourceRequest, table: boolean): void {
    const object = this.store.get(r.type, r.namespace, r.name!);
    if (!object) throw notFound(r.type.plural, r.name!, r.type.group);
    if (table) {
      const body = toTable(r.type, [object], { resourceVersion: object.metadata.resourceVersion }, this.now().getTime());
      this.send(res, 200, JSON.stringify(body), TABLE_CONTENT_TYPE);
      return;
    }
    this.send(res, 200, objectJson(object));
  }

  /** Pods have no processes here: their "log" says what the simulated kubelet did with each container. */
  private log(res: ServerResponse, r: ResourceRequest): void {
    const pod = this.store.get(r.type, r.namespace, r.name!);
    if (!pod) throw notFound(r.type.plural, r.name!, r.type.group);
    const containers = (pod.spec?.containers ?? []) as { name: string; image?: string }[];
    const wanted = r.query.get('container') ?? (containers.length === 1 ? containers[0]!.name : undefined);
    if (!wanted) throw badRequest(`a container name must be specified for pod ${r.name}, choose one of: [${containers.map((c) => c.name).join(' ')}]`);
    const container = containers.find((c) => c.name === wanted);
    if (!container) throw badRequest(`container ${wanted} is not valid for pod ${r.name}`);
    const status = ((pod.status?.containerStatuses ?? []) as { name: string; state?: Record<string, { startedAt?: string; reason?: string }> }[]).find(
      (s) => s.name === wanted,
    );
    const [state, detail] = Object.entries(status?.state ?? {})[0] ?? ['waiting', {}];
    const when = detail.startedAt ? ` since ${detail.startedAt}` : '';
    const text = `rollplane simulator: container ${wanted} (image ${container.image ?? '?'}) is ${state}${detail.reason ? ` (${detail.reason})` : ''}${when}; simulated containers write no output\n`;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) }).end(text);
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
      this.send(res, 200, JSON.stringify(body), TABLE_CONTENT_TYPE);
      return;
    }
    this.send(res, 200, listJson(r.type, page));
  }

  private watch(res: ServerResponse, r: ResourceRequest, table: boolean): void {
    const fieldSelector = r.query.get('fieldSelector');
    // A watch on an item path (…/pods/<name>?watch=1) is a watch on the collection for that one name.
    const field = parseFieldSelector(r.name !== undefined ? [`metadata.name=${r.name}`, fieldSelector].filter(Boolean).join(',') : fieldSelector);
    const rv = r.query.get('resourceVersion');
    let from: number | undefined;
    if (rv && rv !== '0') {
      from = Number(rv);
      if (!Number.isSafeInteger(from) || from < 0) throw badRequest(`invalid resource version "${rv}"`);
    }
    const timeout = Number(r.query.get('timeoutSeconds') ?? '');
    const bookmarks = r.query.get('allowWatchBookmarks');
    this.watches.start(
      res,
      {
        type: r.type,
        namespace: r.type.namespaced ? r.namespace : undefined,
        label: parseLabelSelector(r.query.get('labelSelector')),
        field,
        bookmarks: bookmarks === 'true' || bookmarks === '1',
        timeoutSeconds: Number.isFinite(timeout) && timeout > 0 ? timeout : undefined,
        table,
      },
      from,
    );
  }

  private sendResult(res: ServerResponse, result: WriteResult): void {
    // As kube-apiserver: each warning (e.g. an unknown field pruned under fieldValidation=Warn) in a Warning header.
    if (result.warnings?.length) addWarnings(res, result.warnings);
    this.send(res, result.code, result.json);
  }

  private send(res: ServerResponse, code: number, json: string, contentType = JSON_TYPE): void {
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
    this.send(res, apiError.code, JSON.stringify(apiError.toStatus()));
  }
}

/** Appends `Warning: 299 - "<text>"` headers to those already set on the response. */
function addWarnings(res: ServerResponse, warnings: string[]): void {
  const previous = res.getHeader('Warning');
  const list = previous === undefined ? [] : Array.isArray(previous) ? previous : [String(previous)];
  res.setHeader('Warning', [...list, ...warnings.map((w) => `299 - ${JSON.stringify(w)}`)]);
}

function requestInfo(verb: ApiVerb, r: ResourceRequest): ApiRequestInfo {
  const info: ApiRequestInfo = { verb, resource: r.type };
  if (r.namespace !== undefined) info.namespace = r.namespace;
  if (r.name !== undefined) info.name = r.name;
  if (r.subresource !== undefined) info.subresource = r.subresource;
  if (r.query.get('dryRun')) info.dryRun = true;
  return info;
}
