import { setMaxListeners } from 'node:events';
import { ApiException, type KubeConfig, VersionApi } from '@kubernetes/client-node';
import type { ClusterHealth, ClusterHealthState } from '../domain/clusters/model.js';
import type { RolloutKind } from '../domain/events.js';
import { failureCode } from '../kubeConnection.js';
import { discoverKinds, type KindResources } from './kindDiscovery.js';
import { MemberKubeConfig } from './MemberKubeConfig.js';
import type { MemberNetwork, MemberNetworkError } from './memberNetwork.js';

/** The Kubernetes minor versions rollplane drives (ROLLPLANE_MEMBER_CLUSTER_KUBE_VERSIONS), both ends included. */
export interface VersionWindow {
  min: { major: number; minor: number };
  max: { major: number; minor: number };
}

export interface ConnectionOptions {
  qps: number;
  burst: number;
  requestTimeoutMs: number;
  /** Between two probes of a cluster that answered (READY or VERSION_SKEW). */
  probeIntervalMs: number;
  /** The first retry after a failed probe; each further failure doubles it, up to `backoffMaxMs`. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  versions: VersionWindow;
  /** The registered kinds and the resources each needs served (their contracts'), looked for by discovery. */
  kindResources: KindResources;
  /** The deny list and the cap on discovery bodies (memberNetwork.ts). */
  network?: MemberNetwork | undefined;
  /** Spreads retries by ±20% so that clusters that failed together do not retry together; tests fix it. */
  random?: () => number;
  now?: () => Date;
  /** Called after every probe with the connection's state and the delay it scheduled (diagnostics, tests). */
  onProbed?(snapshot: ConnectionSnapshot): void;
}

/** A connection as diagnostics and tests see it. */
export interface ConnectionSnapshot {
  name: string;
  health: ClusterHealth;
  /** Failed probes since the last one that answered. */
  failures: number;
  /** The delay before the next probe, as scheduled after the last one (ms); undefined while a probe runs. */
  nextProbeInMs: number | undefined;
  /** Requests this connection's budget admitted so far. */
  requests: number;
}

const JITTER = 0.2;

/**
 * The health message of a failure with no code: the member answered, but not as the Kubernetes API does (no JSON
 * content type, not JSON, a document of another shape). Not "no answer" (attack 14, F12).
 */
export const UNREADABLE = "unreadable answer (not the Kubernetes API's JSON)";

/** `v1.31.0` / major "1", minor "31+" → { major, minor }; undefined when unreadable. */
function versionOf(info: { major?: string; minor?: string; gitVersion?: string }): { major: number; minor: number } | undefined {
  const major = Number.parseInt(info.major ?? '', 10);
  const minor = Number.parseInt(info.minor ?? '', 10);
  if (Number.isFinite(major) && Number.isFinite(minor)) return { major, minor };
  const match = /^v?(\d+)\.(\d+)/.exec(info.gitVersion ?? '');
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : undefined;
}

function inWindow(v: { major: number; minor: number }, { min, max }: VersionWindow): boolean {
  const n = v.major * 1000 + v.minor;
  return n >= min.major * 1000 + min.minor && n <= max.major * 1000 + max.minor;
}

type Probe = { state: ClusterHealthState; message: string | null; serverVersion?: string; kinds?: RolloutKind[] };

/**
 * One member cluster's connection (docs/adr/0048-member-clusters.md): its own client and API budget, every request
 * bounded, and a probe loop that keeps its health — /version, then discovery for the kinds it serves. A cluster that
 * answers is probed every `probeIntervalMs`; one that does not is retried with exponential backoff. Nothing here is
 * shared with another connection, and nothing waits on another cluster: a dead member costs its own timer only.
 */
export class MemberConnection {
  readonly kubeConfig: MemberKubeConfig;
  private readonly stopping = new AbortController();
  private readonly versionApi: VersionApi;
  private readonly now: () => Date;
  private readonly random: () => number;
  private current: ClusterHealth;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private nextProbeInMs: number | undefined;
  private probing: Promise<void> | undefined;

  constructor(
    readonly name: string,
    source: KubeConfig,
    private readonly options: ConnectionOptions,
    private readonly onHealth: (name: string, health: ClusterHealth) => void,
  ) {
    // Every request of the member's runtime (each informer's list and watch, each write) listens on it: more than the
    // default ten at once is normal, not a leak.
    setMaxListeners(0, this.stopping.signal);
    this.now = options.now ?? (() => new Date());
    this.random = options.random ?? Math.random;
    this.kubeConfig = MemberKubeConfig.from(source, {
      qps: options.qps,
      burst: options.burst,
      requestTimeoutMs: options.requestTimeoutMs,
      signal: this.stopping.signal,
      network: options.network,
      onRefused: (error) => this.refused(error),
    });
    this.versionApi = this.kubeConfig.makeApiClient(VersionApi);
    this.current = { state: 'CONNECTING', since: this.now(), message: null, serverVersion: null, kinds: [] };
  }

  /** Probes after `delayMs` (now by default), then keeps probing until `stop`. */
  start(delayMs = 0): void {
    this.schedule(delayMs);
  }

  health(): ClusterHealth {
    return this.current;
  }

  snapshot(): ConnectionSnapshot {
    return { name: this.name, health: this.current, failures: this.failures, nextProbeInMs: this.nextProbeInMs, requests: this.kubeConfig.budget.admitted };
  }

  /** One probe now, outside the loop, without recording it (registration's `verify`): the health it would record. */
  async probeNow(): Promise<ClusterHealth> {
    const probe = await this.probe();
    return { state: probe.state, since: this.now(), message: probe.message, serverVersion: probe.serverVersion ?? null, kinds: probe.kinds ?? [] };
  }

  /** Stops probing and aborts what is in flight; does not wait for the network. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.stopping.abort();
    await this.probing;
    this.kubeConfig.releaseConnections();
  }

  private schedule(delayMs: number): void {
    if (this.stopping.signal.aborted) return;
    this.nextProbeInMs = delayMs;
    this.timer = setTimeout(() => {
      this.nextProbeInMs = undefined;
      this.probing = this.probeOnce().finally(() => (this.probing = undefined));
    }, delayMs);
    this.timer.unref();
  }

  private async probeOnce(): Promise<void> {
    const result = await this.probe();
    if (this.stopping.signal.aborted) return;
    this.record(result);
    const answered = result.state === 'READY' || result.state === 'VERSION_SKEW';
    this.failures = answered ? 0 : this.failures + 1;
    this.schedule(answered ? this.options.probeIntervalMs : this.backoff());
    this.options.onProbed?.(this.snapshot());
  }

  /**
   * A list or watch answer of the member's runtime passed its cap (memberNetwork.ts): the member sent what a
   * kube-apiserver would not, so it is UNREACHABLE with the reason (its runtime stops, as for any member not READY)
   * until its next probe, a probe interval later: a member that answers its probes but keeps sending such answers is
   * READY again and refused again, once per probe interval, each refusal costing no more than the cap (ADR 0060).
   */
  private refused(error: MemberNetworkError): void {
    if (this.stopping.signal.aborted || this.current.state !== 'READY') return;
    this.record({ state: 'UNREACHABLE', message: `${error.code}: ${error.message}` });
    if (this.probing) return;
    clearTimeout(this.timer);
    this.schedule(this.options.probeIntervalMs);
  }

  /** base·2^(failures−1), at most the maximum, spread by ±20%. */
  private backoff(): number {
    const { backoffBaseMs, backoffMaxMs } = this.options;
    const delay = Math.min(backoffMaxMs, backoffBaseMs * 2 ** Math.min(this.failures - 1, 30));
    return Math.round(delay * (1 + JITTER * (this.random() * 2 - 1)));
  }

  private async probe(): Promise<Probe> {
    try {
      const info = await this.versionApi.getCode();
      const version = versionOf(info);
      const serverVersion = info.gitVersion ?? `v${info.major}.${info.minor}`;
      if (!version || !inWindow(version, this.options.versions)) {
        const { min, max } = this.options.versions;
        return { state: 'VERSION_SKEW', message: `Kubernetes ${serverVersion} is outside ${min.major}.${min.minor}-${max.major}.${max.minor}`, serverVersion };
      }
      return { state: 'READY', message: null, serverVersion, kinds: await discoverKinds(this.kubeConfig, this.options.kindResources) };
    } catch (error) {
      return this.failed(error);
    }
  }

  /** A failure in one code, never the server's address or anything of the credentials. */
  private failed(error: unknown): Probe {
    const status = error instanceof ApiException ? error.code : undefined;
    if (status === 401 || status === 403) return { state: 'UNAUTHORIZED', message: `HTTP ${status}: the credentials were refused` };
    if ((error as { name?: string } | null)?.name === 'AbortError' || (error as { type?: string } | null)?.type === 'aborted') {
      return { state: 'UNREACHABLE', message: `no answer within ${this.options.requestTimeoutMs} ms` };
    }
    const code = status !== undefined ? `HTTP ${status}` : failureCode(error);
    return { state: 'UNREACHABLE', message: code ?? UNREADABLE };
  }

  private record(probe: Probe): void {
    const before = this.current;
    const next: ClusterHealth = {
      state: probe.state,
      since: probe.state === before.state ? before.since : this.now(),
      message: probe.message,
      serverVersion: probe.serverVersion ?? before.serverVersion,
      // Kept while the cluster does not answer: what it served when it last did.
      kinds: probe.kinds ?? before.kinds,
    };
    const changed =
      next.state !== before.state ||
      next.message !== before.message ||
      next.serverVersion !== before.serverVersion ||
      next.kinds.join() !== before.kinds.join();
    this.current = next;
    if (changed) this.onHealth(this.name, next);
  }
}
