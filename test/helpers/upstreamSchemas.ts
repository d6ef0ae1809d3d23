/**
 * Checks objects against the upstream CustomResourceDefinitions in ../shared/upstream (IPPool, VirtualCluster,
 * ClusterVersion) with the simulator's own structural-schema code (src/sim/crd): prune, drop disallowed nulls,
 * default, validate — exactly what kube-apiserver does to a custom resource before storing it.
 *
 * Two checks, because on the strict simulator the first alone can never fail while the simulator's CRDs equal
 * upstream's (every write is pruned before it is stored):
 * - `dumpUpstreamObjects` reads every stored IPPool, VirtualCluster and ClusterVersion from a running API server and
 *   reports each field upstream's schema would prune, change (null, default) or reject. It catches a simulator
 *   whose CRD drifted from upstream, and objects written to a real cluster by anything.
 * - `startRecordingProxy` sits between rollplane and the API server and records what rollplane *sends* to those
 *   resources; `prunedInWrites` reports every field of those requests the upstream schema prunes (the fields a real
 *   API server would silently drop, e.g. `status.agentDeploymentRef`), and every `Warning: unknown field` the server
 *   answered with.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { CustomResourceSchema } from '../../src/sim/crd/CustomResourceSchema.js';
import { crdServing } from '../../src/sim/crd/crdDefinition.js';
import { pathString } from '../../src/sim/crd/schema.js';
import type { KubeObject } from '../../src/sim/types.js';
import { UPSTREAM_CRD_NAMES, upstreamCrds } from './upstreamCrds.js';

export interface UpstreamKind {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  schema: CustomResourceSchema;
}

/** One problem with one object: a field upstream's schema prunes, normalizes differently, or rejects. */
export interface SchemaFinding {
  /** `IPPool default/net-1`. */
  object: string;
  /** `status.agentDeploymentRef`. */
  path: string;
  problem: 'pruned' | 'changed' | 'invalid';
  detail?: string;
}

const KINDS: readonly string[] = UPSTREAM_CRD_NAMES;

/** The three upstream kinds, keyed by `group/plural`, compiled once per call. */
export function upstreamKinds(): Map<string, UpstreamKind> {
  const out = new Map<string, UpstreamKind>();
  for (const { crd } of upstreamCrds()) {
    if (!KINDS.includes(crd.metadata?.name)) continue;
    const serving = crdServing(crd as KubeObject);
    const type = serving.storage;
    out.set(`${type.group}/${type.plural}`, {
      group: type.group,
      version: type.version,
      plural: type.plural,
      kind: type.kind,
      namespaced: type.namespaced,
      schema: new CustomResourceSchema(serving.schemas.get(type.version)!),
    });
  }
  if (out.size !== KINDS.length) throw new Error(`expected the upstream CRDs ${KINDS.join(', ')} in ../shared/upstream, found ${[...out.keys()].join(', ')}`);
  return out;
}

/** What upstream's schema does to a stored object: every field it prunes, normalizes differently, or rejects. */
export function checkObject(kind: UpstreamKind, object: KubeObject): SchemaFinding[] {
  const name = `${kind.kind} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata?.name}`;
  const copy = structuredClone(object) as Record<string, unknown>;
  const pruned = kind.schema.normalize(copy);
  const findings: SchemaFinding[] = pruned.map((path) => ({ object: name, path, problem: 'pruned' }));
  // Defaults and dropped nulls: the stored object would not survive a round trip through upstream's storage as is.
  const prunedSet = new Set(pruned);
  for (const path of differences(object, copy)) if (!prunedSet.has(path)) findings.push({ object: name, path, problem: 'changed' });
  for (const cause of kind.schema.validate(copy)) findings.push({ object: name, path: cause.field ?? '', problem: 'invalid', detail: cause.message });
  return findings;
}

export interface DumpTarget {
  /** e.g. `http://127.0.0.1:34567` (the simulator's `url`). */
  server: string;
  /** Bearer token; the simulator accepts any. */
  token?: string;
}

export interface Dump {
  /** `group/plural` → the objects read. */
  objects: Map<string, KubeObject[]>;
  findings: SchemaFinding[];
}

/** A simulator's (or any API server's) address from a client-node KubeConfig, e.g. `sim.kubeConfig`. */
export function dumpTargetOf(kubeConfig: KubeConfig): DumpTarget {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig has no current cluster');
  const token = kubeConfig.getCurrentUser()?.token;
  return token ? { server, token } : { server };
}

/** Dumps and throws one line per pruned, changed or invalid field when there is any (for tests after a scenario). */
export async function expectNothingPruned(target: DumpTarget | KubeConfig): Promise<Dump> {
  const dump = await dumpUpstreamObjects('server' in target ? target : dumpTargetOf(target));
  if (dump.findings.length > 0) {
    throw new Error(`objects upstream's CRD schemas would not store as they are:\n${describeFindings(dump.findings).join('\n')}`);
  }
  return dump;
}

/** Lists every IPPool, VirtualCluster and ClusterVersion over HTTP and checks each against upstream's schema. */
export async function dumpUpstreamObjects(target: DumpTarget): Promise<Dump> {
  const kinds = upstreamKinds();
  const objects = new Map<string, KubeObject[]>();
  const findings: SchemaFinding[] = [];
  for (const [key, kind] of kinds) {
    const response = await fetch(`${target.server}/apis/${kind.group}/${kind.version}/${kind.plural}`, {
      headers: { authorization: `Bearer ${target.token ?? 'rollplane-schema-dump'}`, accept: 'application/json' },
    });
    if (!response.ok) throw new Error(`list ${key}: HTTP ${response.status} ${await response.text()}`);
    const list = (await response.json()) as { items?: KubeObject[] };
    const items = list.items ?? [];
    objects.set(key, items);
    // A list omits each item's apiVersion/kind; the stored object has them.
    for (const item of items)
      findings.push(...checkObject(kind, { ...item, apiVersion: item.apiVersion ?? `${kind.group}/${kind.version}`, kind: item.kind ?? kind.kind }));
  }
  return { objects, findings };
}

/** One line per finding, for an assertion message. */
export function describeFindings(findings: readonly SchemaFinding[]): string[] {
  return findings.map((f) => `${f.object}: ${f.path} ${f.problem}${f.detail ? ` (${f.detail})` : ''}`);
}

// ---------------------------------------------------------------------------------------------------------------------
// What rollplane sends
// ---------------------------------------------------------------------------------------------------------------------

export interface RecordedWrite {
  method: string;
  /** Path without the query. */
  path: string;
  query: string;
  contentType: string;
  body: string;
  status: number;
  /** `Warning` response headers (kube-apiserver names each field it pruned under fieldValidation=Warn). */
  warnings: string[];
  /** `group/plural` of the upstream kind written. */
  kind: string;
  subresource?: string;
}

export interface RecordingProxy {
  /** Point rollplane's kubeconfig here. */
  url: string;
  /** Writes (POST/PUT/PATCH) to IPPools, VirtualClusters and ClusterVersions, in the order they were answered. */
  writes: RecordedWrite[];
  close(): Promise<void>;
}

const RESOURCE_PATH = /^\/apis\/([^/]+)\/([^/]+)\/(?:namespaces\/[^/]+\/)?([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/;

/**
 * A plain HTTP proxy to `target` (the simulator) that forwards every request unchanged, watches included, and records
 * the writes to the upstream kinds with their answers.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const kinds = upstreamKinds();
  const writes: RecordedWrite[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
        (answer: IncomingMessage) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          const write = classify(req.method ?? 'GET', req.url ?? '/', kinds);
          if (write) {
            const warning = answer.headers.warning;
            writes.push({
              ...write,
              contentType: String(req.headers['content-type'] ?? ''),
              body: body.toString('utf8'),
              status: answer.statusCode ?? 0,
              warnings: warning === undefined ? [] : Array.isArray(warning) ? warning : [warning],
            });
          }
        },
      );
      forward.on('error', (error) => {
        if (!res.headersSent) res.writeHead(502);
        res.end(String(error));
      });
      // The client went away (a watch closed): stop the upstream request too.
      res.on('close', () => {
        if (!res.writableFinished) forward.destroy();
      });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    writes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function classify(
  method: string,
  url: string,
  kinds: Map<string, UpstreamKind>,
): Pick<RecordedWrite, 'method' | 'path' | 'query' | 'kind' | 'subresource'> | undefined {
  if (!['POST', 'PUT', 'PATCH'].includes(method)) return undefined;
  const [path = '', query = ''] = url.split('?');
  const match = RESOURCE_PATH.exec(path);
  if (!match) return undefined;
  const [, group, , plural, , subresource] = match;
  const kind = `${group}/${plural}`;
  if (!kinds.has(kind)) return undefined;
  return { method, path, query, kind, ...(subresource ? { subresource } : {}) };
}

/**
 * Every field of the recorded writes that upstream's schema prunes: the request body (a whole object, a merge or
 * strategic patch, or an apply configuration, all object-shaped) is pruned as kube-apiserver prunes the object it
 * produces; a JSON patch's `add`/`replace` values are pruned at their paths. Plus every `unknown field` warning the
 * server sent back (which also covers a JSON patch path this check cannot place).
 */
export function prunedInWrites(writes: readonly RecordedWrite[]): SchemaFinding[] {
  const kinds = upstreamKinds();
  const findings: SchemaFinding[] = [];
  for (const write of writes) {
    const kind = kinds.get(write.kind)!;
    const object = `${write.method} ${write.path}${write.query ? `?${write.query}` : ''}`;
    for (const w of write.warnings)
      if (/unknown field/i.test(w)) findings.push({ object, path: w.replace(/^299 - /, ''), problem: 'pruned', detail: 'server warning' });
    for (const path of prunedFields(kind, write)) findings.push({ object, path, problem: 'pruned' });
  }
  return findings;
}

function prunedFields(kind: UpstreamKind, write: RecordedWrite): string[] {
  if (!write.body) return [];
  let body: unknown;
  try {
    body = write.contentType.includes('yaml') ? parseYaml(write.body) : JSON.parse(write.body);
  } catch {
    return [`(body not parseable as ${write.contentType})`];
  }
  if (write.contentType.includes('json-patch')) {
    const out: string[] = [];
    for (const op of Array.isArray(body) ? (body as { op: string; path: string; value?: unknown }[]) : []) {
      if (op.op !== 'add' && op.op !== 'replace') continue;
      out.push(...pruneAt(kind, op.path, op.value));
    }
    return out;
  }
  if (typeof body !== 'object' || body === null) return [];
  return kind.schema.normalize(structuredClone(body) as Record<string, unknown>);
}

/** Prunes a JSON patch value placed at `pointer` by building the object around it. */
function pruneAt(kind: UpstreamKind, pointer: string, value: unknown): string[] {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (parts.length === 0) return [];
  // Array indices become one-element arrays so that `items` schemas apply.
  let wrapped: unknown = structuredClone(value);
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i]!;
    wrapped = /^(\d+|-)$/.test(part) ? [wrapped] : { [part]: wrapped };
  }
  return kind.schema.normalize(wrapped as Record<string, unknown>);
}

/** Paths where `a` and `b` differ (a field present in one only, or a different leaf value). */
function differences(a: unknown, b: unknown, path: (string | number)[] = []): string[] {
  if (isDeepStrictEqual(a, b)) return [];

  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) return a.flatMap((v, i) => differences(v, b[i], [...path, i]));
  if (isPlain(a) && isPlain(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((k) => differences(a[k], b[k], [...path, k]));
  }
  return [pathString(path) || '(root)'];
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
