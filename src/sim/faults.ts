/**
 * Fault injection for the simulator's HTTP API: per-verb latency and error rate (500 InternalError or 503
 * ServiceUnavailable), a conflict rate on updates and patches (409, the real "object has been modified" message so
 * clients retry as they would), dropping every watch connection at an interval, and node crash/recovery.
 *
 * Settable at start (`startSimulator({ faults })`) and while running through the admin endpoint the injector serves
 * on the simulator's own port:
 *   GET  /sim/admin/faults                 → the current FaultConfig
 *   PUT  /sim/admin/faults                 → replace it (JSON body, validated; 400 Status when invalid)
 *   POST /sim/admin/watches/drop           → end every open watch now ({"dropped": n})
 *   POST /sim/admin/nodes/<name>/crash     → the node goes NotReady (its pods unready, its deletions stuck)
 *   POST /sim/admin/nodes/<name>/recover   → Ready again
 * Admin requests themselves are never subject to faults.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { NodeControl } from './behaviour/NodeLifecycle.js';
import { conflict, isSimApiError, SimApiError } from './store/errors.js';
import type { ApiControl, ApiHooks, ApiRequestInfo, ApiVerb } from './types.js';

const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const satisfies readonly ApiVerb[];
const rate = z.number().min(0).max(1);

function perVerb<T extends z.ZodType>(value: T) {
  return z.strictObject(Object.fromEntries(['*', ...VERBS].map((verb) => [verb, value.optional()])) as Record<'*' | ApiVerb, z.ZodOptional<T>>);
}

export const faultConfigSchema = z.strictObject({
  /** Added latency in ms per verb; `*` applies to every verb without its own entry. */
  latencyMs: perVerb(z.number().min(0).max(600_000)).default({}),
  /** Fraction (0-1) of requests per verb answered with an injected error; `*` as above. */
  errorRate: perVerb(rate).default({}),
  /** HTTP status of injected errors: 500 InternalError (default) or 503 ServiceUnavailable. */
  errorCode: z.union([z.literal(500), z.literal(503)]).default(500),
  /** Fraction (0-1) of update and patch requests answered 409 Conflict. */
  conflictRate: rate.default(0),
  /** Drop every open watch connection this often, in ms; 0 = never. */
  dropWatchesEveryMs: z.number().int().min(0).default(0),
  /**
   * Limits latency, errors and conflicts to these resources (`pods`, `ippools.network.harvesterhci.io`, ...); all
   * resources when absent.
   */
  resources: z.array(z.string().min(1)).optional(),
  /**
   * Whether faults also hit server-side dry runs (`?dryRun=All`); default true. False: only writes that would be
   * stored fail — a preflight's dry run passes, the write after it is refused (a member that fails mid-rollout).
   */
  dryRuns: z.boolean().default(true),
});

export type FaultConfig = z.output<typeof faultConfigSchema>;
export type FaultConfigInput = z.input<typeof faultConfigSchema>;

export interface FaultInjectorOptions {
  /** Uniform [0, 1); injectable so tests decide which requests fail. */
  random?: () => number;
  /** How latency is waited for. */
  sleep?: (ms: number) => Promise<void>;
  /** The API server whose watches get dropped. */
  api?: ApiControl;
  /** Node crash/recovery (absent when the simulator runs without behaviour). */
  nodes?: NodeControl;
}

export interface FaultStats {
  delayed: number;
  errors: number;
  conflicts: number;
  watchDrops: number;
}

export class FaultInjector {
  private current: FaultConfig;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private api: ApiControl | undefined;
  private nodes: NodeControl | undefined;
  private dropTimer: NodeJS.Timeout | undefined;
  private readonly counters: FaultStats = { delayed: 0, errors: 0, conflicts: 0, watchDrops: 0 };

  constructor(config: FaultConfigInput = {}, options: FaultInjectorOptions = {}) {
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.api = options.api;
    this.nodes = options.nodes;
    this.current = parseFaultConfig(config);
    this.armWatchDrops();
  }

  /** Connects the injector to a running API server and (optionally) the node controls. */
  attach(targets: { api?: ApiControl; nodes?: NodeControl | undefined }): void {
    if (targets.api) this.api = targets.api;
    if (targets.nodes) this.nodes = targets.nodes;
    this.armWatchDrops();
  }

  config(): FaultConfig {
    return structuredClone(this.current);
  }

  /** Replaces the whole configuration; throws a 400 SimApiError when it is invalid. */
  set(config: unknown): FaultConfig {
    this.current = parseFaultConfig(config);
    this.armWatchDrops();
    return this.config();
  }

  stats(): FaultStats {
    return { ...this.counters };
  }

  /** The hooks to install on the API server (`ApiServer.hooks`). */
  hooks(): ApiHooks {
    return {
      beforeRequest: (info) => this.beforeRequest(info),
      extraRoute: (req, res) => this.adminRoute(req, res),
    };
  }

  /** Waits the configured latency, then maybe fails the request: resolves normally or rejects with a SimApiError. */
  async beforeRequest(info: ApiRequestInfo): Promise<void> {
    const { latencyMs, errorRate, errorCode, conflictRate, resources, dryRuns } = this.current;
    if (resources && !resources.some((r) => r === info.resource.plural || r === `${info.resource.plural}.${info.resource.group}`)) return;
    if (info.dryRun && !dryRuns) return;
    const delay = latencyMs[info.verb] ?? latencyMs['*'] ?? 0;
    if (delay > 0) {
      this.counters.delayed++;
      await this.sleep(delay);
    }
    const failRate = errorRate[info.verb] ?? errorRate['*'] ?? 0;
    if (failRate > 0 && this.random() < failRate) {
      this.counters.errors++;
      throw errorCode === 503
        ? new SimApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request (injected fault)', { retryAfterSeconds: 1 })
        : new SimApiError(500, 'InternalError', 'Internal error occurred: injected fault');
    }
    if ((info.verb === 'update' || info.verb === 'patch') && conflictRate > 0 && this.random() < conflictRate) {
      this.counters.conflicts++;
      const group = info.resource.group;
      throw conflict(
        info.resource.plural,
        info.name ?? '',
        'the object has been modified; please apply your changes to the latest version and try again',
        group,
      );
    }
  }

  /** Ends every open watch now; returns how many there were. */
  dropWatches(): number {
    const dropped = this.api?.dropWatches() ?? 0;
    this.counters.watchDrops += dropped;
    return dropped;
  }

  stop(): void {
    if (this.dropTimer) clearInterval(this.dropTimer);
    this.dropTimer = undefined;
  }

  /** Serves /sim/admin/...; returns false for any other path. */
  async adminRoute(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const path = new URL(req.url ?? '/', 'http://sim').pathname.replace(/\/+$/, '');
    if (!path.startsWith('/sim/admin/')) return false;
    try {
      const method = req.method ?? 'GET';
      if (path === '/sim/admin/faults') {
        if (method === 'GET') return send(res, 200, this.config());
        if (method === 'PUT') return send(res, 200, this.set(await readJson(req)));
        throw new SimApiError(405, 'MethodNotAllowed', `${method} is not allowed on ${path}`);
      }
      if (path === '/sim/admin/watches/drop' && method === 'POST') return send(res, 200, { dropped: this.dropWatches() });
      const node = /^\/sim\/admin\/nodes\/([^/]+)\/(crash|recover)$/.exec(path);
      if (node && method === 'POST') {
        if (!this.nodes) throw new SimApiError(503, 'ServiceUnavailable', 'the simulator runs without cluster behaviour: nodes cannot crash');
        const name = decodeURIComponent(node[1]!);
        return send(res, 200, node[2] === 'crash' ? this.nodes.crash(name) : this.nodes.recover(name));
      }
      throw new SimApiError(404, 'NotFound', `no admin route ${method} ${path}`);
    } catch (error) {
      const status = isSimApiError(error) ? error : new SimApiError(500, 'InternalError', String((error as Error)?.message ?? error));
      return send(res, status.code, status.toStatus());
    }
  }

  private armWatchDrops(): void {
    this.stop();
    const every = this.current.dropWatchesEveryMs;
    if (every > 0 && this.api) {
      this.dropTimer = setInterval(() => this.dropWatches(), every);
      this.dropTimer.unref();
    }
  }
}

/** Validates a fault configuration; a 400 SimApiError (Status-shaped) names the offending fields. */
export function parseFaultConfig(input: unknown): FaultConfig {
  const parsed = faultConfigSchema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const causes = parsed.error.issues.map((issue) => ({ field: issue.path.join('.'), message: issue.message, type: 'FieldValueInvalid' }));
  throw new SimApiError(400, 'BadRequest', `invalid fault configuration: ${causes.map((c) => `${c.field || '(root)'}: ${c.message}`).join('; ')}`, { causes });
}

/** Answers JSON (the admin endpoints'). */
export function send(res: ServerResponse, code: number, body: unknown): true {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
  return true;
}

/** A request's JSON body ({} when empty); a 400 SimApiError when it is not JSON. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new SimApiError(400, 'BadRequest', `request body is not JSON: ${(error as Error).message}`, undefined, { cause: error });
  }
}
