import { deepEqual, isPlainObject } from '../../store/objects.js';
import type { KubeObject, ResourceType, StoreEvent } from '../../types.js';
import type { Controller } from '../ControllerRuntime.js';
import type { BehaviourContext } from '../context.js';
import { isTerminating, keyOf, splitKey } from '../kube.js';
import {
  AGENT_LABEL,
  agentPodFor,
  CLUSTER_NETWORK_LABEL,
  HOLD_ANNOTATION,
  IPPOOL_FINALIZER,
  isVmDhcpControllerDeployment,
  parseControllerArgs,
  POOL_NAME_LABEL,
  POOL_NAMESPACE_LABEL,
  rsplit,
  type VmDhcpOptions,
} from './vmDhcpChart.js';
import { ipBetween, VmDhcpIpam } from './vmDhcpIpam.js';

/** Requeue after a failed sync, as lasso's default limiter: max(5 ms·2^n capped at 30 s, 1 ms for 30 tries then 2 min). */
export interface VmDhcpTiming {
  retryBaseMs: number;
  retryMaxMs: number;
  /** Failures after which every retry waits `slowRetryMs`. */
  fastRetries: number;
  slowRetryMs: number;
}

const LEASE_NAMESPACE = 'kube-system';
const LEASE_NAME = 'vm-dhcp-controllers';

export const VM_DHCP_TIMING: Readonly<VmDhcpTiming> = Object.freeze({ retryBaseMs: 5, retryMaxMs: 30_000, fastRetries: 30, slowRetryMs: 120_000 });

type Status = Record<string, any>;
type HandlerResult = [Status, Error | undefined];

interface Process {
  signature: string;
  options: VmDhcpOptions;
}

/**
 * harvester/vm-dhcp-controller's IPPool controller (`pkg/controller/ippool/controller.go`, commit c3042d6), run while
 * the chart's controller Deployment exists with replicas > 0, configured by that Deployment's container args. A change
 * of those args is a restart: the new process forgets its IPAM and re-lists every IPPool, which is how a Helm upgrade
 * of `--image` reaches every pool at once.
 *
 * One sync of a pool runs upstream's handler chain in its registration order, each handler seeing the object the one
 * before wrote: ippool-register (DeployAgent → Registered), ippool-cache-builder (BuildCache → CacheReady),
 * ippool-agent-monitor (MonitorAgent → AgentReady), OnChange, OnRemove (wrangler finalizer). A failing status handler
 * keeps the old status and sets its condition False with reason `Error` and the error text; any error requeues the
 * pool with the rate limiter. Triggers, as upstream: any IPPool event; any Pod event in a namespace that holds agent
 * Pods re-queues the pools of all agent Pods there (wrangler relatedresource); a restart queues every pool.
 */
export class VmDhcpController implements Controller {
  readonly name = 'upstream:vm-dhcp-controller';
  private process: Process | undefined;
  private readonly ipam = new VmDhcpIpam();
  private readonly failures = new Map<string, number>();
  /** Agent Pods by key → the pool key their labels name (the relatedresource resolver's view). */
  private readonly agents = new Map<string, string>();
  private lastSignature: string | undefined;
  /** The pod holding the leader lease (by name). */
  private holder: string | undefined;
  /**
   * The relatedresource trigger without its quadratic cost. Queuing every pool with an agent in a namespace on each
   * pod event there cost O(pools) per event even though the runtime drops a key already pending; at 10,000 pools that
   * was most of the simulator's time. So this remembers which pool keys it handed the runtime that have not been
   * reconciled since (`queued`: the runtime would drop them again) and, per namespace, the pools with an agent there
   * that are not queued (`idle`): an event hands over exactly those, which is what the runtime would have added.
   */
  private readonly queued = new Set<string>();
  private readonly idle = new Map<string, Set<string>>();
  /** namespace → pool key → how many agent Pods there name it. */
  private readonly agentCounts = new Map<string, Map<string, number>>();
  /**
   * The keys of the pods the controller Deployment's selector matches in its namespace (leader election's
   * candidates before their phase is checked), for that Deployment version; rebuilt when it changes or when a pod
   * the selector matches (before or after the event) comes, goes or changes labels.
   */
  private selected: { deployment: KubeObject; keys: string[] } | undefined;

  constructor(
    private readonly ctx: BehaviourContext,
    private readonly timing: VmDhcpTiming = VM_DHCP_TIMING,
  ) {
    for (const pod of ctx.index.all('pods')) this.track('ADDED', pod);
    this.lastSignature = this.leaderSignature();
  }

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { group, plural } = event.resource;
    const selected = this.selected?.deployment;
    if (
      selected &&
      group === '' &&
      plural === 'pods' &&
      (matchesSelector(selected, event.object) || (event.previous !== undefined && matchesSelector(selected, event.previous)))
    ) {
      this.selected = undefined;
    }
    // Not running (no pod of the controller leads): nothing to do, and nothing queued for rollplane's benchmarks.
    if (group === 'network.harvesterhci.io' && plural === 'ippools')
      return event.type === 'DELETED' || this.lastSignature === undefined ? [] : this.handOver([keyOf(event.object)]);
    const controllerEvent =
      (group === '' && plural === 'pods' && (isControllerPod(event.object) || (event.previous !== undefined && isControllerPod(event.previous)))) ||
      (group === 'apps' &&
        plural === 'deployments' &&
        (isVmDhcpControllerDeployment(event.object) || (event.previous && isVmDhcpControllerDeployment(event.previous))));
    if (controllerEvent) {
      // Who leads may have changed: a new process (its args) re-lists every pool, as a restarted controller does.
      const signature = this.leaderSignature();
      if (signature !== this.lastSignature) {
        this.lastSignature = signature;
        return signature ? this.handOver(this.allPoolKeys()) : [];
      }
    }
    if (group === '' && plural === 'pods') {
      this.track(event.type, event.object);
      return this.lastSignature !== undefined && this.agents.size > 0 ? this.relatedPools(event.object.metadata.namespace ?? '') : [];
    }
    return [];
  }

  initialKeys(): string[] {
    return this.lastSignature === undefined ? [] : this.handOver(this.allPoolKeys());
  }

  /** The pools of all agent Pods in `namespace` that the runtime does not hold already (see `queued`). */
  private relatedPools(namespace: string): string[] {
    const idle = this.idle.get(namespace);
    if (!idle || idle.size === 0) return [];
    return this.handOver([...idle]);
  }

  /** Marks pool keys as handed to the runtime (pending until reconciled). */
  private handOver(keys: string[]): string[] {
    for (const key of keys) {
      this.queued.add(key);
      for (const idle of this.idle.values()) idle.delete(key);
    }
    return keys;
  }

  reconcile(key: string): number | undefined {
    // Out of the runtime's queue: the next related event queues it again.
    this.queued.delete(key);
    for (const [namespace, counts] of this.agentCounts) if (counts.has(key)) this.idleIn(namespace).add(key);
    const options = this.running();
    const ippools = this.type('network.harvesterhci.io', 'ippools');
    if (!options || !ippools) return undefined;
    const { namespace, name } = splitKey(key);
    let pool = this.ctx.store.get(ippools, namespace, name);
    if (!pool) {
      this.failures.delete(key);
      return undefined;
    }
    const errors: Error[] = [];
    const step = (result: [KubeObject, Error | undefined]) => {
      pool = result[0];
      if (result[1]) errors.push(result[1]);
    };
    step(this.statusHandler(ippools, pool, 'Registered', (p, s) => this.deployAgent(p, s, options)));
    step(this.statusHandler(ippools, pool, 'CacheReady', (p, s) => this.buildCache(p, s)));
    step(this.statusHandler(ippools, pool, 'AgentReady', (p, s) => this.monitorAgent(p, s, options)));
    step(this.onChange(ippools, pool));
    step(this.onRemove(ippools, pool, options));
    if (errors.length === 0) {
      this.failures.delete(key);
      return undefined;
    }
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const exponential = Math.min(this.timing.retryMaxMs, this.timing.retryBaseMs * 2 ** Math.min(failures, 30));
    return failures >= this.timing.fastRetries ? Math.max(exponential, this.timing.slowRetryMs) : Math.max(exponential, 1);
  }

  /**
   * The options of the running controller process — the one in the pod that holds the leader lease — starting a new
   * process (and writing the Lease) when leadership moved; undefined when no pod leads.
   */
  private running(): VmDhcpOptions | undefined {
    const leader = this.leader();
    if (!leader) {
      this.process = undefined;
      return undefined;
    }
    const signature = podSignature(leader);
    if (this.process?.signature !== signature) {
      const container = leader.spec?.containers?.[0] ?? {};
      const env: Record<string, string> = {};
      for (const e of container.env ?? []) if (typeof e?.value === 'string') env[e.name] = e.value;
      const parsed = parseControllerArgs(container.args ?? [], env, versionOf(String(container.image ?? '')));
      // An unparsable --image makes upstream exit 1 before it elects: the controller is down until its Deployment is
      // fixed. (The simulated kubelet does not see the exit: the pod turns Ready and the rollout goes on, where a real
      // one would stall with the old pod still leading.)
      if (parsed instanceof Error) {
        this.process = undefined;
        return undefined;
      }
      this.writeLease(leader);
      this.ipam.clear();
      this.failures.clear();
      this.process = { signature, options: parsed };
    }
    return this.process.options;
  }

  private deployment(): KubeObject | undefined {
    for (const d of this.ctx.index.all('deployments')) if (isVmDhcpControllerDeployment(d) && !isTerminating(d)) return d;
    return undefined;
  }

  /**
   * The pod whose process leads (wrangler's leader.RunOrDie on the Lease `kube-system/vm-dhcp-controllers`): the
   * holder keeps it while its pod runs; a pod being deleted releases it at once (ReleaseOnCancel, on SIGTERM); then the
   * oldest running pod of the Deployment takes it (upstream: within its 2 s retry period). During a rolling update the
   * old pod therefore keeps reconciling, with the old args, until the new one takes the lease.
   */
  private leader(): KubeObject | undefined {
    const deployment = this.deployment();
    if (!deployment) {
      this.holder = undefined;
      return undefined;
    }
    const candidates: KubeObject[] = [];
    for (const key of this.selectedPods(deployment)) {
      const pod = this.ctx.index.get('pods', key);
      if (pod && !isTerminating(pod) && pod.status?.phase === 'Running') candidates.push(pod);
    }
    const current = candidates.find((pod) => pod.metadata.name === this.holder);
    if (current) return current;
    const next = candidates.sort(
      (a, b) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)) || a.metadata.name.localeCompare(b.metadata.name),
    )[0];
    this.holder = next?.metadata.name;
    return next;
  }

  /** Keys of the pods in the Deployment's namespace its selector matches (cached, see `selected`). */
  private selectedPods(deployment: KubeObject): string[] {
    if (this.selected?.deployment !== deployment) {
      const keys: string[] = [];
      for (const pod of this.ctx.index.all('pods')) if (matchesSelector(deployment, pod)) keys.push(keyOf(pod));
      this.selected = { deployment, keys };
    }
    return this.selected.keys;
  }

  private leaderSignature(): string | undefined {
    const leader = this.leader();
    return leader ? podSignature(leader) : undefined;
  }

  /** The Lease as client-go's leader election writes it when a new holder acquires it. */
  private writeLease(leader: KubeObject): void {
    const type = this.ctx.store.resourceType('coordination.k8s.io', 'leases');
    if (!type || !this.ctx.store.get(this.ctx.types.pods, leader.metadata.namespace, leader.metadata.name)) return;
    const now = new Date(this.now()).toISOString().replace('Z', '000Z');
    const existing = this.ctx.store.get(type, LEASE_NAMESPACE, LEASE_NAME);
    if (existing?.spec?.holderIdentity === leader.metadata.name) return;
    const spec = {
      holderIdentity: leader.metadata.name,
      leaseDurationSeconds: 45,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: existing ? (existing.spec?.leaseTransitions ?? 0) + 1 : 0,
    };
    try {
      if (existing) this.ctx.store.update(type, { ...existing, spec });
      else
        this.ctx.store.create(type, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEASE_NAME, namespace: LEASE_NAMESPACE }, spec });
    } catch {
      // The Lease is the sim's record of who leads, not a lock it depends on.
    }
  }

  // --- ippool-register -------------------------------------------------------------------------------------------

  private deployAgent(pool: KubeObject, status: Status, options: VmDhcpOptions): HandlerResult {
    if (pool.spec?.paused === true) return [status, new Error(`ippool ${pool.metadata.namespace}/${pool.metadata.name} was administratively disabled`)];
    if (options.noAgent) return [status, undefined];
    const networkName = String(pool.spec?.networkName ?? '');
    const [nadNamespace, nadName] = rsplit(networkName);
    const nad = this.nad(nadNamespace, nadName);
    if (nad instanceof Error) return [status, nad];
    const clusterNetwork = nad.metadata.labels?.[CLUSTER_NETWORK_LABEL];
    if (clusterNetwork === undefined) return [status, new Error(`could not find clusternetwork for nad ${networkName}`)];

    const ref = pool.status?.agentPodRef;
    if (ref) {
      // v0.3.0 on: the controller's image unless held. Before (v0.1–v0.2.1): no hold, and the recorded image is kept.
      if (options.refreshesAgents) status.agentPodRef.image = pool.metadata.annotations?.[HOLD_ANNOTATION] !== undefined ? ref.image : options.agentImage;
      const pod = this.ctx.index.get('pods', `${ref.namespace}/${ref.name}`);
      if (pod) {
        if (options.refreshesAgents && isTerminating(pod)) return [status, new Error(`agent pod ${ref.name} marked for deletion`)];
        if (pod.metadata.uid !== ref.uid)
          return [
            status,
            new Error(options.refreshesAgents ? `agent pod ${ref.name} uid mismatch` : `agent pod ${ref.name} uid mismatch, waiting for removal then redeploy`),
          ];
        return [status, undefined];
      }
      // upstream logs "agent pod <name> missing, redeploying" and falls through to create it
    }
    const agent = agentPodFor(pool, options, clusterNetwork);
    status.agentPodRef ??= {};
    // Also for a held pool whose agent went missing: upstream recreates it with the controller's image.
    status.agentPodRef.image = options.agentImage;
    let created: KubeObject;
    try {
      created = this.ctx.store.create(this.ctx.types.pods, withPodDefaults(agent));
    } catch (error) {
      if ((error as { code?: number }).code === 409) return [status, undefined];
      return [status, error as Error];
    }
    status.agentPodRef.namespace = created.metadata.namespace;
    status.agentPodRef.name = created.metadata.name;
    status.agentPodRef.uid = created.metadata.uid;
    return [status, undefined];
  }

  // --- ippool-cache-builder ----------------------------------------------------------------------------------------

  private buildCache(pool: KubeObject, status: Status): HandlerResult {
    if (pool.spec?.paused === true) return [status, new Error(`ippool ${pool.metadata.namespace}/${pool.metadata.name} was administratively disabled`)];
    if (conditionOf(pool.status, 'CacheReady')?.status === 'True') return [status, undefined];
    const network = String(pool.spec?.networkName ?? '');
    const v4 = pool.spec?.ipv4Config ?? {};
    const failed =
      this.ipam.newSubnet(network, String(v4.cidr ?? ''), String(v4.pool?.start ?? ''), String(v4.pool?.end ?? '')) ??
      this.ipam.revoke(network, String(v4.serverIP ?? '')) ??
      this.ipam.revoke(network, String(v4.router ?? ''));
    if (failed) return [status, failed];
    for (const ip of v4.pool?.exclude ?? []) this.ipam.revoke(network, String(ip));
    for (const [ip, mac] of Object.entries<string>(pool.status?.ipv4?.allocated ?? {})) {
      if (mac !== 'EXCLUDED' && mac !== 'RESERVED') this.ipam.allocate(network, ip);
    }
    return [status, undefined];
  }

  // --- ippool-agent-monitor ----------------------------------------------------------------------------------------

  private monitorAgent(pool: KubeObject, status: Status, options: VmDhcpOptions): HandlerResult {
    if (pool.spec?.paused === true) return [status, new Error(`ippool ${pool.metadata.namespace}/${pool.metadata.name} was administratively disabled`)];
    if (options.noAgent) return [status, undefined];
    const ref = pool.status?.agentPodRef;
    if (!ref) return [status, new Error(`agent for ippool ${pool.metadata.namespace}/${pool.metadata.name} is not deployed`)];
    const pod = this.ctx.index.get('pods', `${ref.namespace}/${ref.name}`);
    if (!pod) return [status, new Error(`pods "${ref.name}" not found`)];
    if (pod.metadata.uid !== ref.uid || pod.spec?.containers?.[0]?.image !== ref.image) {
      if (isTerminating(pod)) return [status, new Error(`agent pod ${pod.metadata.name} marked for deletion`)];
      try {
        this.ctx.store.delete(this.ctx.types.pods, pod.metadata.namespace, pod.metadata.name);
      } catch (error) {
        return [status, error as Error];
      }
      return [status, new Error(`agent pod ${pod.metadata.name} obsolete and purged`)];
    }
    const ready = (pod.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready');
    if (ready?.status !== 'True') return [status, new Error(`agent pod ${pod.metadata.name} not ready`)];
    return [status, undefined];
  }

  // --- OnChange / OnRemove -----------------------------------------------------------------------------------------

  private onChange(type: ResourceType, pool: KubeObject): [KubeObject, Error | undefined] {
    if (isTerminating(pool)) return [pool, undefined];
    const network = String(pool.spec?.networkName ?? '');
    const labelled = this.ensureNadLabels(pool);
    if (labelled) return [pool, labelled];
    const status = workingCopy(pool.status);
    const now = this.now();
    if (pool.spec?.paused === true) {
      const failed = this.cleanup(pool);
      if (failed) return [pool, failed];
      delete status.agentPodRef;
      setCondition(status, 'Stopped', 'True', now);
      return this.writeIfChanged(type, pool, status);
    }
    setCondition(status, 'Stopped', 'False', now);
    if (!this.ipam.isInitialized(network)) {
      setCondition(status, 'CacheReady', 'False', now);
      setField(condition(status, 'CacheReady'), 'reason', 'NotInitialized', now);
      setField(condition(status, 'CacheReady'), 'message', '', now);
      if (!deepEqual(status, pool.status ?? {})) return this.writeIfChanged(type, pool, status);
    }
    const counts = this.ipam.counts(network);
    if (counts instanceof Error) return [pool, counts];
    const v4 = pool.spec?.ipv4Config ?? {};
    const allocated: Record<string, string> = { ...status.ipv4?.allocated };
    const inPool = (ip: unknown) => typeof ip === 'string' && ipBetween(ip, String(v4.pool?.start ?? ''), String(v4.pool?.end ?? ''));
    if (inPool(v4.serverIP)) allocated[v4.serverIP] = 'RESERVED';
    if (inPool(v4.router)) allocated[v4.router] = 'RESERVED';
    for (const ip of v4.pool?.exclude ?? []) allocated[ip] = 'EXCLUDED';
    status.ipv4 = { ...status.ipv4, used: counts.used, available: counts.available };
    if (Object.keys(allocated).length > 0) status.ipv4.allocated = allocated;
    else delete status.ipv4.allocated;
    if (deepEqual(status, pool.status ?? {})) return [pool, undefined];
    status.lastUpdate = rfc3339(now);
    return this.writeIfChanged(type, pool, status);
  }

  /** wrangler's OnRemove adapter: keeps a finalizer on live pools; on deletion removes the agent, then the finalizer. */
  private onRemove(type: ResourceType, pool: KubeObject, options: VmDhcpOptions): [KubeObject, Error | undefined] {
    const finalizers = pool.metadata.finalizers ?? [];
    const has = finalizers.includes(IPPOOL_FINALIZER);
    if (!isTerminating(pool)) {
      if (has) return [pool, undefined];
      return this.write(() => this.ctx.store.update(type, { ...pool, metadata: { ...pool.metadata, finalizers: [...finalizers, IPPOOL_FINALIZER] } }), pool);
    }
    if (!has) return [pool, undefined];
    if (!options.noAgent) {
      const failed = this.cleanup(pool);
      if (failed) return [pool, failed];
    }
    return this.write(
      () => this.ctx.store.update(type, { ...pool, metadata: { ...pool.metadata, finalizers: finalizers.filter((f) => f !== IPPOOL_FINALIZER) } }),
      pool,
    );
  }

  private cleanup(pool: KubeObject): Error | undefined {
    const ref = pool.status?.agentPodRef;
    if (!ref) return undefined;
    try {
      this.ctx.store.delete(this.ctx.types.pods, ref.namespace, ref.name);
    } catch (error) {
      if ((error as { code?: number }).code !== 404) return error as Error;
    }
    this.ipam.delete(String(pool.spec?.networkName ?? ''));
    return undefined;
  }

  private ensureNadLabels(pool: KubeObject): Error | undefined {
    const [nadNamespace, nadName] = rsplit(String(pool.spec?.networkName ?? ''));
    const nad = this.nad(nadNamespace, nadName);
    if (nad instanceof Error) return nad;
    const labels = nad.metadata.labels ?? {};
    if (labels[POOL_NAMESPACE_LABEL] === pool.metadata.namespace && labels[POOL_NAME_LABEL] === pool.metadata.name) return undefined;
    try {
      this.ctx.store.update(this.type('k8s.cni.cncf.io', 'network-attachment-definitions')!, {
        ...nad,
        metadata: { ...nad.metadata, labels: { ...labels, [POOL_NAMESPACE_LABEL]: pool.metadata.namespace ?? '', [POOL_NAME_LABEL]: pool.metadata.name } },
      });
    } catch (error) {
      return error as Error;
    }
    return undefined;
  }

  // --- wrangler plumbing -------------------------------------------------------------------------------------------

  /** `RegisterIPPoolStatusHandler`'s sync: run the handler on a copy of the status, record the outcome in `cond`, write if changed. */
  private statusHandler(
    type: ResourceType,
    pool: KubeObject,
    cond: string,
    handler: (pool: KubeObject, status: Status) => HandlerResult,
  ): [KubeObject, Error | undefined] {
    // The stored status never changes: compared as it is; the handler gets a working copy of the parts it may change.
    const original: Status = pool.status ?? {};
    let [status, error] = handler(pool, workingCopy(original));
    if (error) status = workingCopy(original);
    const now = this.now();
    const conflict = (error as { code?: number } | undefined)?.code === 409;
    setError(status, cond, conflict ? undefined : error, now);
    if (deepEqual(original, status)) return [pool, error];
    condition(status, cond).lastUpdateTime = rfc3339(now);
    const [written, writeError] = this.writeIfChanged(type, pool, status);
    return [written, error ?? writeError];
  }

  private writeIfChanged(type: ResourceType, pool: KubeObject, status: Status): [KubeObject, Error | undefined] {
    if (deepEqual(status, pool.status ?? {})) return [pool, undefined];
    // Handed over: `status` is this sync's own working copy (workingCopy) over the stored version's immutable parts.
    return this.write(
      () => this.ctx.store.update(type, { ...pool, status }, type.subresources.includes('status') ? 'status' : undefined, { handOver: true }),
      pool,
    );
  }

  private write(fn: () => KubeObject, fallback: KubeObject): [KubeObject, Error | undefined] {
    try {
      return [fn(), undefined];
    } catch (error) {
      return [fallback, error as Error];
    }
  }

  private nad(namespace: string, name: string): KubeObject | Error {
    const type = this.type('k8s.cni.cncf.io', 'network-attachment-definitions');
    const nad = type ? this.ctx.store.get(type, namespace, name) : undefined;
    return nad ?? new Error(`network-attachment-definitions.k8s.cni.cncf.io "${name}" not found`);
  }

  private track(type: StoreEvent['type'], pod: KubeObject): void {
    const key = keyOf(pod);
    const labels = pod.metadata.labels ?? {};
    const namespace = pod.metadata.namespace ?? '';
    const before = this.agents.get(key);
    if (type !== 'DELETED' && labels[AGENT_LABEL] === 'agent') {
      const pool = `${labels[POOL_NAMESPACE_LABEL] ?? ''}/${labels[POOL_NAME_LABEL] ?? ''}`;
      this.agents.set(key, pool);
      if (before !== pool) {
        if (before !== undefined) this.countAgent(namespace, before, -1);
        this.countAgent(namespace, pool, 1);
      }
    } else if (before !== undefined) {
      this.agents.delete(key);
      this.countAgent(namespace, before, -1);
    }
  }

  /** Keeps `agentCounts` and `idle` in step with an agent Pod naming `pool` in `namespace` coming (+1) or going (-1). */
  private countAgent(namespace: string, pool: string, delta: 1 | -1): void {
    if (pool.endsWith('/')) return; // no pool named: upstream's resolver skips it
    let counts = this.agentCounts.get(namespace);
    if (!counts) {
      counts = new Map();
      this.agentCounts.set(namespace, counts);
    }
    const n = (counts.get(pool) ?? 0) + delta;
    if (n > 0) {
      counts.set(pool, n);
      if (!this.queued.has(pool)) this.idleIn(namespace).add(pool);
    } else {
      counts.delete(pool);
      this.idle.get(namespace)?.delete(pool);
    }
  }

  private idleIn(namespace: string): Set<string> {
    let idle = this.idle.get(namespace);
    if (!idle) {
      idle = new Set();
      this.idle.set(namespace, idle);
    }
    return idle;
  }

  private allPoolKeys(): string[] {
    const type = this.type('network.harvesterhci.io', 'ippools');
    return type ? this.ctx.store.list(type).map(keyOf) : [];
  }

  private type(group: string, plural: string): ResourceType | undefined {
    return this.ctx.store.resourceType(group, plural);
  }

  private now(): number {
    return this.ctx.scheduler.now();
  }
}

/** Signatures by stored pod version (never modified): asked on every sync, the same pod leading through all of them. */
const signatures = new WeakMap<KubeObject, string>();

/** What identifies one run of the controller process: the pod it runs in and that pod's containers (args, env, image). */
function podSignature(pod: KubeObject): string {
  let signature = signatures.get(pod);
  if (signature === undefined) {
    signature = `${pod.metadata.uid}\u0000${JSON.stringify(pod.spec?.containers ?? [])}`;
    signatures.set(pod, signature);
  }
  return signature;
}

/** A pod of the chart's controller Deployment (its template carries the chart's labels). */
/** Whether `pod` is in the Deployment's namespace and carries every label of its selector's matchLabels. */
function matchesSelector(deployment: KubeObject, pod: KubeObject): boolean {
  if (pod.metadata.namespace !== deployment.metadata.namespace) return false;
  const selector = (deployment.spec?.selector?.matchLabels ?? {}) as Record<string, string>;
  for (const k in selector) if (pod.metadata.labels?.[k] !== selector[k]) return false;
  return true;
}

function isControllerPod(pod: KubeObject): boolean {
  return isVmDhcpControllerDeployment(pod);
}

/** The controller's release, from its image tag (`rancher/harvester-vm-dhcp-controller:v0.3.0`); '' when it has none. */
function versionOf(image: string): string {
  const colon = image.lastIndexOf(':');
  return colon > image.lastIndexOf('/') ? image.slice(colon + 1) : '';
}

/** The fields the API server defaults on a new Pod, so an in-process create looks like one made over HTTP. */
function withPodDefaults(pod: KubeObject): KubeObject {
  return {
    ...pod,
    spec: { restartPolicy: 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', ...pod.spec },
    status: { phase: 'Pending' },
  };
}

/**
 * What a sync may change of a pool's status, copied; the rest shared with the stored version. The handlers and OnChange
 * set top-level fields, `agentPodRef`'s fields and conditions' fields, and replace `ipv4` whole; everything below
 * (`ipv4.allocated`, which grows with the pool's leases) is only read. A deep copy of all of it per handler was most of
 * the simulator's time beside rollplane (ADR 0053). The test suite freezes stored versions, so a sync mutating a shared
 * part would throw there.
 */
function workingCopy(stored: Status | undefined): Status {
  const status: Status = { ...stored };
  if (isPlainObject(status.agentPodRef)) status.agentPodRef = { ...status.agentPodRef };
  if (Array.isArray(status.conditions)) status.conditions = status.conditions.map((c: unknown) => (isPlainObject(c) ? { ...c } : c));
  return status;
}

// --- wrangler's condition package over plain JSON (genericcondition.GenericCondition) ---------------------------

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function conditionOf(status: Status | undefined, type: string): Status | undefined {
  return (status?.conditions as Status[] | undefined)?.find((c) => c.type === type);
}

/** findOrCreateCond: a new condition starts as Unknown. */
function condition(status: Status, type: string): Status {
  const found = conditionOf(status, type);
  if (found) return found;
  const created: Status = { type, status: 'Unknown' };
  status.conditions = [...(status.conditions ?? []), created];
  return created;
}

/** setValue: a field that changes touches lastUpdateTime; empty strings are omitted, as Go's omitempty does. */
function setField(cond: Status, field: 'status' | 'reason' | 'message', value: string, now: number): void {
  if ((cond[field] ?? '') === value) return;
  if (value === '') delete cond[field];
  else cond[field] = value;
  cond.lastUpdateTime = rfc3339(now);
}

function setCondition(status: Status, type: string, value: 'True' | 'False', now: number): void {
  setField(condition(status, type), 'status', value, now);
}

/** Cond.SetError: success → True with empty message and reason; failure → False, reason `Error`, the error text. */
function setError(status: Status, type: string, error: Error | undefined, now: number): void {
  const cond = condition(status, type);
  setField(cond, 'status', error ? 'False' : 'True', now);
  setField(cond, 'message', error ? error.message : '', now);
  setField(cond, 'reason', error ? 'Error' : '', now);
}
