/**
 * Virtual clusters in the domain's terms: what the API can ask about VirtualClusters and ClusterVersions, upgrade
 * statistics from the ClusterUpgradeObserved history, and how `bumpClusterVersion` becomes a rollout plan. No GraphQL
 * or Kubernetes types here; `./controller` implements `VirtualClusterQueries` from its informer caches.
 *
 * Versions: a rollout of this kind goes from one ClusterVersion *spec* to another, named by `clusterSpecVersion`
 * (`spec-` + 12 hex of the spec's sha256). The ClusterVersion's resourceVersion, which clusters record once applied,
 * only exists after the spec is written, so it cannot name a plan; the spec hash can, it survives restarts, and a
 * rollback's target version is the spec it restores.
 */
import { readPayload } from '../../domain/eventPayloads.js';
import { clusterUpgradeObserved } from './events.js';
import { createHash } from 'node:crypto';
import { ConflictError, NotImplementedError, ValidationError } from '../../errors.js';
import type { Domain } from '../../domain/Domain.js';
import { preflightAcrossClusters, refusedIn } from '../../domain/clusterPreflight.js';
import { type KindPortRequest, kindPortsAcross, planAcrossClusters } from '../../domain/clusterSelection.js';
import type { DriftItem } from '../../domain/drift.js';
import { scopedKey, stagedLaunch, starterOf } from '../../domain/RolloutLauncher.js';
import { EventType, type StoredEvent } from '../../domain/events.js';
import { parseImageReference } from '../../util/imageReference.js';
import { checkPageSize, pageByKey, pageOfRows, type KeyedPage } from '../../util/pagination.js';
import type { RolloutPlan, RolloutStrategy } from '../../domain/kinds/index.js';
import {
  ETCD_REFUSED,
  parseClusterRef,
  virtualClusterStrategy,
  type BumpClusterVersionRequest,
  type ClusterVersionChange,
  type ComponentChange,
  type ComponentKey,
  type VirtualClusterStrategy,
} from './contract.js';
import type { LaunchResult } from '../../domain/RolloutLauncher.js';
import type { NewTarget } from '../../domain/RolloutService.js';
import { busyRolloutName, type LaunchGuard } from '../../domain/launchRules.js';
import { canonicalJson } from '../../util/canonicalJson.js';

/** One VirtualCluster as the API shows it. */
export interface VirtualClusterView {
  /** The member cluster whose caches it was read from, when another than `local` (a list's `cluster`, ADR 0058). */
  cluster?: string;
  namespace: string;
  name: string;
  clusterVersionName: string;
  phase: string | null;
  clusterNamespace: string | null;
  reason: string | null;
  message: string | null;
  /** Label tenancy.x-k8s.io/cluster-version-applied. */
  appliedResourceVersion: string | null;
  /** The spec version the control plane runs, when known (see `clusterSpecVersion`). */
  appliedSpecVersion: string | null;
  /** Applied resourceVersion equals the ClusterVersion's current one. */
  upToDate: boolean;
  readyForUpgrade: boolean;
  /** An upgrade is in progress (between its first write and its end). */
  upgrading: boolean;
}

/** One ClusterVersion as the API shows it. */
export interface ClusterVersionView {
  name: string;
  resourceVersion: string;
  specVersion: string;
  apiServerImage: string | null;
  controllerManagerImage: string | null;
  etcdImage: string | null;
  spec: Record<string, unknown>;
}

/** The cluster side of virtual clusters (informer caches), implemented by the vcluster controllers. */
export interface VirtualClusterQueries {
  /** Feature gate ClusterVersionPartialUpgrade: without it no cluster is ever upgraded. */
  partialUpgradeEnabled(): boolean;
  /** Why rollplane must leave upgrades to the CAPN vc-manager (its gate is on, ADR 0018); undefined when it need not. */
  upstreamUpgrades?(): string | undefined;
  /**
   * Dry-runs the first write a rollout makes to a cluster (the opt-in label) on the first of `targets`; throws the
   * refusal (CONFLICT or UNAVAILABLE, `reason: PREFLIGHT_REFUSED`), e.g. the vc-manager's webhook without endpoints.
   */
  preflight?(targets: readonly { namespace: string; name: string }[]): Promise<void>;
  /** Every VirtualCluster, in any order. */
  virtualClusters(): Promise<VirtualClusterView[]>;
  virtualCluster(namespace: string, name: string): Promise<VirtualClusterView | undefined>;
  /** Every ClusterVersion, in any order. */
  clusterVersions(): Promise<ClusterVersionView[]>;
  clusterVersion(name: string): Promise<ClusterVersionView | undefined>;
  /** Clusters behind their ClusterVersion, for the `drift` query (versions are ClusterVersion resourceVersions). */
  driftItems(): Promise<VirtualClusterDriftItem[]>;
}

export interface VirtualClusterDriftItem extends DriftItem {
  kind: 'VIRTUAL_CLUSTER';
}

// -------------------------------------------------------------------------------------------------------------------
// Versions

/** The version name of a ClusterVersion spec: `spec-` + the first 12 hex digits of its canonical sha256. */
export function clusterSpecVersion(spec: unknown): string {
  return `spec-${createHash('sha256')
    .update(canonicalJson(spec ?? {}))
    .digest('hex')
    .slice(0, 12)}`;
}

export type { ClusterVersionChange } from './contract.js';

/** The ClusterVersion change a VIRTUAL_CLUSTER rollout carries in its strategy; undefined for any other rollout. */
export function clusterVersionChangeOf(strategy: RolloutStrategy): ClusterVersionChange | undefined {
  return strategy.kind === 'VIRTUAL_CLUSTER' ? strategy.clusterVersionChange : undefined;
}

// -------------------------------------------------------------------------------------------------------------------
// Queries

export interface VirtualClusterFilter {
  namespace?: string | null;
  clusterVersionName?: string | null;
  /** true: only clusters behind their ClusterVersion; false: only current ones. */
  behind?: boolean | null;
}

function ports(domain: Domain): VirtualClusterQueries {
  if (!domain.virtualClusters) throw VIRTUAL_CLUSTER_PORT.missingLocal();
  return domain.virtualClusters;
}

/** pageByKey, but an empty page's endCursor is the caller's `after` (so that a reader at the end keeps its place). */
function paginate<T>(all: T[], keyOf: (item: T) => string, first: number | null | undefined, after: string | null | undefined): KeyedPage<T> {
  const page = pageByKey(all, keyOf, first, after, 100);
  return { ...page, endCursor: page.endCursor ?? after ?? null };
}

const clusterKey = (vc: { namespace: string; name: string }) => `${vc.namespace}/${vc.name}`;
const byKey =
  <T>(keyOf: (t: T) => string) =>
  (a: T, b: T) =>
    keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0;

/** VirtualClusters ordered by namespace and name. */
export async function listVirtualClusters(
  domain: Domain,
  filter: VirtualClusterFilter | null | undefined,
  first?: number | null,
  after?: string | null,
): Promise<KeyedPage<VirtualClusterView>> {
  const all = await ports(domain).virtualClusters();
  const matching = all.filter(
    (vc) =>
      (filter?.namespace == null || vc.namespace === filter.namespace) &&
      (filter?.clusterVersionName == null || vc.clusterVersionName === filter.clusterVersionName) &&
      (filter?.behind == null || vc.upToDate === !filter.behind),
  );
  return paginate(matching, clusterKey, first, after);
}

export async function getVirtualCluster(domain: Domain, namespace: string, name: string): Promise<VirtualClusterView | undefined> {
  return ports(domain).virtualCluster(namespace, name);
}

export interface ClusterVersionSummary extends ClusterVersionView {
  clusterCount: number;
  behindCount: number;
}

async function summarize(domain: Domain, versions: ClusterVersionView[]): Promise<ClusterVersionSummary[]> {
  const clusters = await ports(domain).virtualClusters();
  return versions.map((cv) => {
    const using = clusters.filter((vc) => vc.clusterVersionName === cv.name);
    return { ...cv, clusterCount: using.length, behindCount: using.filter((vc) => !vc.upToDate).length };
  });
}

/** ClusterVersions ordered by name, with how many clusters use each and how many of those are behind. */
export async function listClusterVersions(domain: Domain, first?: number | null, after?: string | null): Promise<KeyedPage<ClusterVersionSummary>> {
  const versions = (await ports(domain).clusterVersions()).sort(byKey((cv) => cv.name));
  return paginate(await summarize(domain, versions), (cv) => cv.name, first, after);
}

export async function getClusterVersion(domain: Domain, name: string): Promise<ClusterVersionSummary | undefined> {
  const cv = await ports(domain).clusterVersion(name);
  return cv ? (await summarize(domain, [cv]))[0] : undefined;
}

/** The cluster's newest ClusterUpgradeObserved event, if any. */
export async function lastUpgradeOf(domain: Domain, namespace: string, name: string, cluster?: string): Promise<StoredEvent | undefined> {
  const [event] = await domain.events.listBefore(
    { types: [EventType.ClusterUpgradeObserved], kind: 'VIRTUAL_CLUSTER', namespace, name, ...(cluster ? { cluster } : {}) },
    undefined,
    1,
  );
  return event;
}

/** The cluster's events (upgrade observations, rollout target changes), newest first; `after` is an event id. */
export async function clusterHistory(
  domain: Domain,
  namespace: string,
  name: string,
  first: number | null | undefined,
  afterId: number | undefined,
  cluster?: string,
) {
  const size = checkPageSize(first, 50);
  const rows = await domain.events.listBefore({ kind: 'VIRTUAL_CLUSTER', namespace, name, ...(cluster ? { cluster } : {}) }, afterId, size + 1);
  return pageOfRows(rows, size);
}

export interface UpgradeDurationStats {
  clusterVersion: string;
  count: number;
  failed: number;
  p50Seconds: number | null;
  p95Seconds: number | null;
  maxSeconds: number | null;
}

/** Nearest-rank percentile of ascending values. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const HISTORY_PAGE = 1000;

/**
 * Percentiles of `clusters_upgrade_seconds` observations per cluster version, from the whole history. Every
 * observation counts, as in the histogram (including ALREADY_APPLIED no-ops and failures).
 */
export async function clusterUpgradeDurations(domain: Domain, clusterVersion?: string | null): Promise<UpgradeDurationStats[]> {
  const byVersion = new Map<string, { seconds: number[]; failed: number }>();
  let after: number | undefined;
  for (;;) {
    const page = await domain.events.listAfter({ types: [EventType.ClusterUpgradeObserved] }, after, HISTORY_PAGE);
    for (const event of page) {
      const payload = readPayload(clusterUpgradeObserved.type, event.payload);
      const version = payload.clusterVersion ?? '';
      if (clusterVersion != null && version !== clusterVersion) continue;
      const entry = byVersion.get(version) ?? { seconds: [], failed: 0 };
      byVersion.set(version, entry);
      if (payload.seconds !== undefined) entry.seconds.push(payload.seconds);
      if (payload.outcome === 'FAILED') entry.failed++;
    }
    if (page.length < HISTORY_PAGE) break;
    after = page[page.length - 1]!.id;
  }
  return [...byVersion.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([version, { seconds, failed }]) => {
      const sorted = [...seconds].sort((a, b) => a - b);
      return {
        clusterVersion: version,
        count: seconds.length,
        failed,
        p50Seconds: percentile(sorted, 50),
        p95Seconds: percentile(sorted, 95),
        maxSeconds: sorted.length ? sorted[sorted.length - 1]! : null,
      };
    });
}

// -------------------------------------------------------------------------------------------------------------------
// bumpClusterVersion

export type { BumpClusterVersionRequest, ComponentChange } from './contract.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Json = isObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function firstContainer(spec: Json, component: 'apiServer' | 'controllerManager', field: string): Json {
  const containers = spec[component]?.statefulset?.spec?.template?.spec?.containers;
  if (!Array.isArray(containers) || !isObject(containers[0])) {
    throw new ValidationError(field, `the ClusterVersion has no ${component} StatefulSet container to change`);
  }
  return containers[0];
}

function applyComponentChange(spec: Json, component: 'apiServer' | 'controllerManager', change: ComponentChange): void {
  const field = `input.${component}`;
  const container = firstContainer(spec, component, field);
  if (change.image != null) container.image = change.image;
  if (change.args != null) container.args = [...change.args];
  if (change.env != null) {
    const env: Json[] = Array.isArray(container.env) ? [...container.env] : [];
    for (const variable of change.env) {
      const at = env.findIndex((e) => e.name === variable.name);
      if (variable.value == null) {
        if (at >= 0) env.splice(at, 1);
      } else if (at >= 0) env[at] = { name: variable.name, value: variable.value };
      else env.push({ name: variable.name, value: variable.value });
    }
    container.env = env;
  }
}

/** Checks the spec a bump would write; `touched` tells which components the input changed (for field names). */
function validateDesiredSpec(spec: Json, fieldOf: (component: ComponentKey) => string): void {
  for (const component of ['apiServer', 'controllerManager'] as const) {
    const bundle = spec[component];
    if (bundle === undefined) continue;
    const field = fieldOf(component);
    if (!isObject(bundle)) throw new ValidationError(field, 'must be an object with statefulset and service');
    for (const key of Object.keys(bundle)) {
      if (!['metadata', 'statefulset', 'service'].includes(key))
        throw new ValidationError(`${field}.${key}`, 'unknown field; a component has metadata, statefulset and service');
    }
    for (const [key, kind] of [
      ['statefulset', 'StatefulSet'],
      ['service', 'Service'],
    ] as const) {
      const object = bundle[key];
      if (object === undefined) continue;
      if (!isObject(object)) throw new ValidationError(`${field}.${key}`, `must be a ${kind} object`);
      if (typeof object.apiVersion !== 'string' || typeof object.kind !== 'string') {
        throw new ValidationError(`${field}.${key}`, `an embedded ${kind} needs apiVersion and kind (server-side apply requires them)`);
      }
      if (object.kind !== kind) throw new ValidationError(`${field}.${key}.kind`, `must be ${kind}, not ${object.kind}`);
      if (typeof object.metadata?.name !== 'string' || object.metadata.name === '') throw new ValidationError(`${field}.${key}.metadata.name`, 'is required');
    }
    const sts = bundle.statefulset;
    if (component === 'apiServer' && !sts) throw new ValidationError(`${field}.statefulset`, 'the apiserver StatefulSet is required');
    if (sts) {
      if (sts.spec?.updateStrategy?.type === 'OnDelete') {
        throw new ValidationError(`${field}.statefulset.spec.updateStrategy.type`, 'OnDelete never rolls the control plane; use RollingUpdate');
      }
      const containers = sts.spec?.template?.spec?.containers;
      if (!Array.isArray(containers) || containers.length === 0)
        throw new ValidationError(`${field}.statefulset.spec.template.spec.containers`, 'needs at least one container');
      for (const [i, container] of containers.entries()) {
        const path = `${field}.statefulset.spec.template.spec.containers[${i}].image`;
        if (typeof container?.image !== 'string') throw new ValidationError(path, 'is required');
        parseImageReference(container.image, path);
      }
    }
  }
}

/**
 * One ClusterVersion has one spec at a time: a second active rollout changing it (even for other clusters) would
 * rewrite the spec under the first one's clusters. Refused as CONFLICT, like overlapping targets. A launch guard: the
 * rollout service runs it over the active VIRTUAL_CLUSTER rollouts under the launch lock, in the creating transaction,
 * so two replicas cannot both pass it.
 */
function refuseConcurrentChange(clusterVersion: string): LaunchGuard {
  return (active) => {
    const busy = active.find((rollout) => clusterVersionChangeOf(rollout.strategy)?.name === clusterVersion);
    if (busy) {
      throw new ConflictError(`${busyRolloutName(busy)} is changing ClusterVersion ${clusterVersion}; wait for it, or abort it first`, {
        details: { rolloutIds: [busy.id] },
      });
    }
  };
}

/**
 * Plans and launches a ClusterVersion change: validates the change, computes the spec to write and the clusters to
 * upgrade (in namespace/name order; clusters already on the new spec or not Running are skipped), and hands the plan
 * to the launcher (dry run, idempotency, overlap rules).
 */
export async function bumpClusterVersion(domain: Domain, input: BumpClusterVersionRequest, idempotencyScope: string): Promise<LaunchResult> {
  const clusters = await kindPortsAcross(domain, input.memberClusters, VIRTUAL_CLUSTER_PORT);
  const planned = await Promise.all(clusters.map(async ({ cluster, queries }) => ({ cluster, queries, planned: await planClusterVersionIn(queries, input) })));
  // The dry runs of the first writes, in every cluster: a bounded number at once, each refusal naming its cluster.
  await preflightAcrossClusters(
    planned,
    async ({ cluster, queries, planned: { changing } }) => {
      if (changing.length > 0) await queries.preflight?.(changing).catch((error: unknown) => refusedIn(cluster, error));
    },
    { onProgress: domain.clusterPorts?.preflightProgress?.bind(domain.clusterPorts) },
  );
  const byCluster = new Map(planned.map((p) => [p.cluster, p.planned.plan]));
  // One rollout, one strategy: the ClusterVersion change each cluster's was planned from must be the same (ADR 0058).
  const plan = await planAcrossClusters<VirtualClusterStrategy>(
    clusters.map((c) => c.cluster),
    async (cluster) => byCluster.get(cluster)!,
  );
  const { cause, dryRun, idempotencyKey, ...request } = input;
  return domain.launcher.launch({
    plan,
    cause: cause ?? {},
    idempotencyKey: scopedKey(idempotencyScope, idempotencyKey),
    startedBy: starterOf(idempotencyScope),
    dryRun: dryRun === true,
    request,
    guard: refuseConcurrentChange(planned[0]!.planned.clusterVersion),
    ...(await stagedLaunch(domain, input.waveStrategy, idempotencyScope)),
  });
}

/** How the virtual-cluster kind reaches its query port in a cluster (src/domain/clusterSelection.ts). */
export const VIRTUAL_CLUSTER_PORT: KindPortRequest<VirtualClusterQueries> = {
  kind: 'VIRTUAL_CLUSTER',
  pick: (ports) => ports.virtualClusters,
  missingLocal: () => new NotImplementedError('virtual clusters (no vcluster controller is set up)'),
};

/**
 * One member cluster's plan of a ClusterVersion change, from its own caches, with its own refusals; `changing`: the
 * targets its preflight dry-runs (bumpClusterVersion asks every cluster's together).
 */
async function planClusterVersionIn(
  queries: VirtualClusterQueries,
  input: BumpClusterVersionRequest,
): Promise<{ plan: RolloutPlan<VirtualClusterStrategy>; clusterVersion: string; changing: NewTarget[] }> {
  if (!queries.partialUpgradeEnabled()) {
    throw new ConflictError('the ClusterVersionPartialUpgrade feature gate is off: no virtual cluster would be upgraded');
  }
  const cv = await queries.clusterVersion(input.clusterVersion);
  if (!cv) throw new ValidationError('input.clusterVersion', `no ClusterVersion named "${input.clusterVersion.slice(0, 253)}"`);

  // The change (its shape was checked by the contract: only known components, never etcd).
  const previousSpec = cv.spec as Json;
  let desired: Json = structuredClone(previousSpec);
  const patched = new Set<ComponentKey>();
  if (isObject(input.specPatch)) {
    for (const key of Object.keys(input.specPatch)) patched.add(key as ComponentKey);
    desired = mergePatch(desired, input.specPatch) as Json;
  }
  if (input.apiServer != null) applyComponentChange(desired, 'apiServer', input.apiServer);
  if (input.controllerManager != null) applyComponentChange(desired, 'controllerManager', input.controllerManager);
  validateDesiredSpec(desired, (component) => (patched.has(component) ? `input.specPatch.${component}` : `clusterVersion.spec.${component}`));
  if (canonicalJson(desired.etcd) !== canonicalJson(previousSpec.etcd)) throw new ValidationError('input', ETCD_REFUSED);

  const desiredVersion = clusterSpecVersion(desired);
  const change: ClusterVersionChange = {
    name: cv.name,
    previousSpec,
    previousVersion: cv.specVersion,
    previousResourceVersion: cv.resourceVersion,
    desiredSpec: desired,
    desiredVersion,
  };

  // The clusters.
  const all = await queries.virtualClusters();
  let chosen: VirtualClusterView[];
  if (input.clusters != null) {
    const index = new Map(all.map((vc) => [clusterKey(vc), vc]));
    const seen = new Set<string>();
    chosen = [];
    for (const [i, text] of input.clusters.entries()) {
      const vc = index.get(clusterKey(parseClusterRef(text)!));
      if (!vc) throw new ValidationError(`input.clusters[${i}]`, `no VirtualCluster ${text}`);
      if (vc.clusterVersionName !== cv.name)
        throw new ValidationError(`input.clusters[${i}]`, `${text} uses ClusterVersion ${vc.clusterVersionName}, not ${cv.name}`);
      if (!seen.has(text)) chosen.push(vc);
      seen.add(text);
    }
  } else {
    chosen = all.filter((vc) => vc.clusterVersionName === cv.name);
  }
  chosen.sort(byKey(clusterKey));
  const targets: NewTarget[] = chosen.map((vc) => {
    const current = vc.appliedSpecVersion;
    const target: NewTarget = { namespace: vc.namespace, name: vc.name, fromVersion: current, toVersion: desiredVersion };
    if (vc.phase !== 'Running') target.skipReason = `not Running (phase ${vc.phase ?? 'unknown'}); upgrades need a running control plane`;
    else if (current === desiredVersion && vc.upToDate) target.skipReason = 'already on this version';
    return target;
  });

  const plan: RolloutPlan<VirtualClusterStrategy> = {
    kind: 'VIRTUAL_CLUSTER',
    fromVersion: cv.specVersion,
    toVersion: desiredVersion,
    selector: { clusterVersion: cv.name, clusters: input.clusters ?? null },
    strategy: virtualClusterStrategy(input, change),
    targets,
  };
  // After validation, so bad input is still named; a dry run too, since the real one would be refused (ADR 0018).
  const upstream = queries.upstreamUpgrades?.();
  if (upstream) throw new ConflictError(`refused: ${upstream}`);
  return { plan, clusterVersion: cv.name, changing: targets.filter((t) => !t.skipReason) };
}

declare module '../../domain/Domain.js' {
  interface KindPorts {
    /** VirtualClusters and ClusterVersions (this kind's controller caches); absent when not set up. */
    virtualClusters?: VirtualClusterQueries;
  }
}
