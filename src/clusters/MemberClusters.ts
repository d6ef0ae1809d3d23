import { lookup } from 'node:dns/promises';
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { Gauge, type Registry } from 'prom-client';
import { CLUSTER_HEALTH_STATES, type ClusterHealth, isDriven, LOCAL_CLUSTER } from '../domain/clusters/model.js';
import type { Logger } from '../log.js';
import { type ConnectionOptions, type ConnectionSnapshot, MemberConnection } from './MemberConnection.js';

/** A member's credentials as a source found them: loaded, and a fingerprint that changes when they do. */
export interface MemberCredentials {
  kubeConfig: KubeConfig;
  /** A hash of the kubeconfig's text (never the text): a changed Secret reconnects, an unchanged one does not. */
  fingerprint: string;
}

/** The fingerprint of a kubeconfig's text: SHA-256, so that it says nothing of the credentials. */
export function fingerprintOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface MemberClustersOptions extends ConnectionOptions {
  logger: Logger;
  registry?: Registry;
  /** Where each health change is written (the registry in the history store); a failure is logged, never thrown. */
  recordHealth(name: string, health: ClusterHealth): Promise<unknown>;
}

/** How many new connections send their first probe in one tick, and the gap between such batches. */
const START_BATCH = 20;
const START_GAP_MS = 10;

/**
 * Every member cluster's connection, by name (docs/adr/0048-member-clusters.md). `reconcile` makes the set of
 * connections what the sources found: it starts, replaces (credentials changed) and stops connections in memory, and
 * never awaits a network call while doing so — each connection probes on its own timer — so one unreachable member
 * never delays another, nor the sources. Health changes go to the store in order per cluster, and to
 * `rollplane_cluster_up` and `rollplane_cluster_health`, whose series are the registered clusters' (never input's).
 */
export class MemberClusters {
  private readonly connections = new Map<string, { connection: MemberConnection; fingerprint: string }>();
  private readonly writes = new Map<string, Promise<unknown>>();
  private readonly listeners = new Set<(name: string, health: ClusterHealth) => void>();
  private readonly up: Gauge<'cluster'> | undefined;
  private readonly state: Gauge<'cluster' | 'state'> | undefined;
  private stopped = false;

  constructor(private readonly options: MemberClustersOptions) {
    if (options.registry) {
      this.up = new Gauge({
        name: 'rollplane_cluster_up',
        help: 'Whether the member cluster answers and is driven (1: READY or DEGRADED) or not (0)',
        labelNames: ['cluster'],
        registers: [options.registry],
      });
      this.state = new Gauge({
        name: 'rollplane_cluster_health',
        help: "The member cluster's health state: 1 for its current state (CONNECTING, READY, DEGRADED, UNREACHABLE, UNAUTHORIZED, VERSION_SKEW), 0 for the others",
        labelNames: ['cluster', 'state'],
        registers: [options.registry],
      });
    }
  }

  /**
   * Connects every cluster of `desired` that is not connected, reconnects those whose fingerprint changed, and stops
   * the connections of clusters no longer desired (`local` included only when `desired` has it).
   */
  reconcile(desired: ReadonlyMap<string, MemberCredentials>): void {
    if (this.stopped) return;
    let started = 0;
    for (const [name, credentials] of desired) {
      const existing = this.connections.get(name);
      if (existing?.fingerprint === credentials.fingerprint) continue;
      if (existing) void existing.connection.stop();
      // Only the connection in the map reports: one replaced or stopped a moment ago is no longer this cluster's.
      // `local` is the operator's own connection: the deny list is for the clusters others register (its cap holds).
      const options = name === LOCAL_CLUSTER ? { ...this.options, network: this.options.network?.withoutDenyList() } : this.options;
      const connection: MemberConnection = new MemberConnection(name, credentials.kubeConfig, options, (cluster, health) => {
        if (this.connections.get(cluster)?.connection === connection) this.healthChanged(cluster, health);
      });
      this.connections.set(name, { connection, fingerprint: credentials.fingerprint });
      this.healthChanged(name, connection.health());
      // First probes in small batches, one batch a tick: 1,000 members probed in one timer tick stalled the event loop
      // (and /healthz with it) for 340-400 ms (attack 13, F4); 1,000 now start over half a second.
      connection.start(Math.floor(started++ / START_BATCH) * START_GAP_MS);
      this.options.logger.info(
        { cluster: name, reconnect: existing !== undefined },
        existing ? 'member cluster credentials changed: reconnecting' : 'member cluster connecting',
      );
    }
    for (const [name, { connection }] of this.connections) {
      if (desired.has(name)) continue;
      this.connections.delete(name);
      void connection.stop();
      this.up?.remove({ cluster: name });
      for (const state of CLUSTER_HEALTH_STATES) this.state?.remove({ cluster: name, state });
      this.options.logger.info({ cluster: name }, 'member cluster disconnected');
    }
  }

  /** The connection of `name`, for the parts that will drive the cluster (informers, reconcilers: issue 29's second half). */
  get(name: string): MemberConnection | undefined {
    return this.connections.get(name)?.connection;
  }

  /**
   * The cluster already connected to `server`; undefined when none. Compared by where the URL leads: scheme, port, path
   * and the addresses its host resolves to, every loopback address one (attack 20, F6: `localhost`, `0.0.0.0` and
   * `[::ffff:127.0.0.1]` registered a second name for one cluster). One cluster registered under two names would be
   * driven twice. `except`: a name whose own server this may be (its credentials changed); `also`: servers of names
   * about to connect (a source's pass registers several at once).
   */
  async nameServing(server: string, options: { except?: string; also?: ReadonlyMap<string, string> } = {}): Promise<string | undefined> {
    const wanted = await serverKeys(server);
    const servers: [string, string | undefined][] = [...this.connections].map(([name, { connection }]) => [
      name,
      connection.kubeConfig.getCurrentCluster()?.server,
    ]);
    for (const [name, theirs] of [...servers, ...(options.also ?? new Map<string, string>())]) {
      if (theirs === undefined || name === options.except) continue;
      for (const key of await serverKeys(theirs)) if (wanted.has(key)) return name;
    }
    return undefined;
  }

  get size(): number {
    return this.connections.size;
  }

  snapshots(): ConnectionSnapshot[] {
    return [...this.connections.values()].map(({ connection }) => connection.snapshot()).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Calls `listener` on every health change of any member (tests wait on it; the API's subscription will). */
  onHealth(listener: (name: string, health: ClusterHealth) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops every connection (aborting what is in flight) and waits for the health writes already started. */
  async stop(): Promise<void> {
    this.stopped = true;
    const connections = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(connections.map(({ connection }) => connection.stop()));
    await Promise.all(this.writes.values());
  }

  private healthChanged(name: string, health: ClusterHealth): void {
    this.up?.set({ cluster: name }, isDriven(health.state) ? 1 : 0);
    for (const state of CLUSTER_HEALTH_STATES) this.state?.set({ cluster: name, state }, state === health.state ? 1 : 0);
    const level = health.state === 'READY' || health.state === 'CONNECTING' ? 'info' : 'warn';
    this.options.logger[level]({ cluster: name, health: health.state, since: health.since, reason: health.message }, `member cluster ${name}: ${health.state}`);
    // One write at a time per cluster, so the store ends with the last state; a failed write is logged and passed.
    const previous = this.writes.get(name) ?? Promise.resolve();
    const write = previous
      .then(() => this.options.recordHealth(name, health))
      .catch((error: unknown) => this.options.logger.warn({ cluster: name, err: error }, 'could not record the member cluster health'))
      .finally(() => {
        if (this.writes.get(name) === write) this.writes.delete(name);
      });
    this.writes.set(name, write);
    for (const listener of this.listeners) listener(name, health);
  }
}

export { LOCAL_CLUSTER };

/** How long a host name's resolution may take before the name itself stands for it. */
const LOOKUP_TIMEOUT_MS = 2_000;

/** serverKeys answers kept this long: a source's pass over a thousand entries compares each new one with all. */
const SERVER_KEYS_TTL_MS = 30_000;
const SERVER_KEYS_KEPT = 10_000;
const serverKeysMemo = new Map<string, { at: number; keys: Promise<Set<string>> }>();

/** Where a server URL leads, as MemberClusters.nameServing compares it: one key per address its host resolves to. */
function serverKeys(server: string): Promise<Set<string>> {
  const now = Date.now();
  const kept = serverKeysMemo.get(server);
  if (kept && now - kept.at < SERVER_KEYS_TTL_MS) return kept.keys;
  if (serverKeysMemo.size >= SERVER_KEYS_KEPT) serverKeysMemo.clear();
  const keys = resolveServerKeys(server);
  serverKeysMemo.set(server, { at: now, keys });
  return keys;
}

async function resolveServerKeys(server: string): Promise<Set<string>> {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return new Set([server.replace(/\/+$/, '')]);
  }
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const path = url.pathname.replace(/\/+$/, '');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = await Promise.race([
    lookup(host, { all: true }).then(
      (found) => found.map((a) => a.address),
      () => [host],
    ),
    new Promise<string[]>((resolve) => setTimeout(() => resolve([host]), LOOKUP_TIMEOUT_MS).unref()),
  ]);
  return new Set(addresses.map((address) => `${url.protocol}//${canonicalAddress(address)}:${port}${path}`));
}

/** An address with IPv4-mapped IPv6 read as IPv4, and every loopback (or unspecified, which reaches this host) as one. */
function canonicalAddress(address: string): string {
  let a = address.toLowerCase();
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (dotted) a = dotted[1]!;
  else if (hex) {
    const high = Number.parseInt(hex[1]!, 16);
    const low = Number.parseInt(hex[2]!, 16);
    a = `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  if (a.startsWith('127.') || a === '0.0.0.0' || a === '::1' || a === '::' || a === 'localhost') return 'loopback';
  return a;
}
