import { setMaxListeners } from 'node:events';
import { ApiException, type KubeConfig, VersionApi } from '@kubernetes/client-node';
import { type ClusterHealth, type ClusterHealthState, isDriven } from '../domain/clusters/model.js';
import type { RolloutKind } from '../domain/events.js';
import { httpStatusOf } from '../kube/errors.js';
import { AnswerCutOffError } from '../kube/memberHttpLibrary.js';
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
  /**
   * While targets wait on the member (the engine observed one it cannot drive: `workWaiting`), a member that does not
   * answer is probed again after at most this long, whatever its backoff grew to (attack 15, F5;
   * ROLLPLANE_MEMBER_CLUSTER_WAITING_PROBE_MS). Default: the smaller of 5 s and `backoffMaxMs`.
   */
  waitingProbeMs?: number;
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
 * How long a `workWaiting` mark lasts: the engine looks at a rollout at least every second while it runs (and asks why a
 * waiting target's cluster is not driven each time), so a mark outlives the gaps between its looks.
 */
const WAITING_MARK_MS = 10_000;

/** Lists of a kind's collection that fail in a row, before its cache is first synced, before the kind is set aside. */
export const FAILED_LISTS_BEFORE_DEGRADED = 3;

/**
 * A kind discovery found that the member's runtime cannot read (docs/adr/0066-member-kind-caches.md). NOT_SERVED: its
 * list answered 404 (a CRD removed, or discovery stale); the kind is treated as not served, as if discovery had not
 * found it. FAILING: its list keeps failing (5xx, no answer in time, an unreadable answer); the cluster is DEGRADED.
 * Either way the kind is left out of `kinds` (the member's runtime runs the others) and tried again at `retryAt`.
 */
export interface KindIssue {
  state: 'NOT_SERVED' | 'FAILING';
  /** The collection whose list failed (the informer's name: `ippools`). */
  collection: string;
  /** For people: the collection and the failure in a code (`ippools list: HTTP 500`), never an address. */
  reason: string;
  since: Date;
  /** Times set aside in a row; the wait before the next try doubles with each. */
  attempts: number;
  /** Failed lists in a row: the runtime's before it set the kind aside, then one per failed re-check (for people). */
  failedLists: number;
  retryAt: number;
  /** A one-object list of the failing collection: the next try, made before the kind is given back to the runtime. */
  check: () => Promise<unknown>;
}

/**
 * The health message of a failure with no code: the member answered, but not as the Kubernetes API does (no JSON
 * content type, not JSON, a document of another shape). Not "no answer" (attack 14, F12).
 */
export const UNREADABLE = "unreadable answer (not the Kubernetes API's JSON)";

/**
 * A failed request to a member in one code: `HTTP 500`, a socket error code, `no answer within N ms`, or the
 * unreadable answer; never the server's address or anything of the credentials.
 */
export function failureMessage(error: unknown, requestTimeoutMs: number): string {
  // The member answered, and the request's timeout cut its answer off (attack 17, L3: a list sending half its body).
  if (error instanceof AnswerCutOffError) {
    return `the answer was cut off by the request timeout (${requestTimeoutMs} ms, ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS) before its end`;
  }
  if ((error as { name?: string } | null)?.name === 'AbortError' || (error as { type?: string } | null)?.type === 'aborted') {
    return `no answer within ${requestTimeoutMs} ms`;
  }
  const status = httpStatusOf(error);
  const code = status !== undefined ? `HTTP ${status}` : failureCode(error);
  // A body cut off before its end by the member or the network, not by the timeout (that is AnswerCutOffError above).
  if (code === 'ERR_STREAM_PREMATURE_CLOSE') return `${code}: the answer was cut off before its end (the connection was closed)`;
  return code ?? UNREADABLE;
}

/** Why a collection's list failed, for people: `ippools list: HTTP 500`. */
export function listFailure(collection: string, error: unknown, requestTimeoutMs: number): string {
  return `${collection} list: ${failureMessage(error, requestTimeoutMs)}`;
}

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
  /** When the timer set by `schedule` fires (ms since the epoch). */
  private nextProbeAt = 0;
  /** Until when targets are known to wait on this member (`workWaiting`). */
  private waitingUntil = 0;
  /** Kinds discovery found that cannot be read, set aside from `kinds` (ADR 0066). */
  private readonly issues = new Map<RolloutKind, KindIssue>();
  /** The kinds the last answered discovery found, before `issues` are set aside. */
  private discovered: RolloutKind[] = [];
  /** Times each kind was set aside since its caches last synced: the retry delay doubles with each. */
  private readonly setAside = new Map<RolloutKind, number>();

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

  /** Every request to the member but a watch is aborted after this long. */
  get requestTimeoutMs(): number {
    return this.options.requestTimeoutMs;
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

  /** The kinds set aside because they cannot be read, with why (ADR 0066). */
  kindIssues(): ReadonlyMap<RolloutKind, Readonly<KindIssue>> {
    return this.issues;
  }

  /**
   * The member's runtime could not read `kind` (its list answered 404, or failed FAILED_LISTS_BEFORE_DEGRADED times in
   * a row before its cache synced): the kind is set aside — left out of `kinds`, so the runtime restarts with the kinds
   * it can read — and `check` is tried again after a probe interval, then twice as long each time it fails, up to the
   * maximum backoff. The cluster is DEGRADED while a kind FAILING; a kind NOT_SERVED is one it does not serve.
   */
  kindUnreadable(kind: RolloutKind, issue: Pick<KindIssue, 'state' | 'collection' | 'reason' | 'check' | 'failedLists'>): void {
    if (this.stopping.signal.aborted || !this.discovered.includes(kind) || !isDriven(this.current.state)) return;
    const before = this.issues.get(kind);
    const attempts = (this.setAside.get(kind) ?? 0) + 1;
    this.setAside.set(kind, attempts);
    const since = before?.state === issue.state ? before.since : this.now();
    this.issues.set(kind, { ...issue, since, attempts, retryAt: this.now().getTime() + this.kindRetryDelay(attempts) });
    this.record({ state: 'READY', message: null, kinds: this.discovered });
  }

  /** The member's runtime read `kind` (its caches synced): a later failure starts from the first retry delay again. */
  kindReadable(kind: RolloutKind): void {
    this.setAside.delete(kind);
  }

  /**
   * Targets of a rollout wait on this member, which cannot be driven now: while that lasts (WAITING_MARK_MS after the
   * last call, or two probe intervals if longer), a member that does not answer is probed again within
   * `waitingProbeMs` instead of its grown backoff, so its targets are driven soon after it answers again (attack 15,
   * F5). A probe already scheduled further away is brought forward.
   */
  workWaiting(): void {
    const cap = this.waitingCap();
    this.waitingUntil = this.now().getTime() + Math.max(WAITING_MARK_MS, 2 * cap, 2 * this.options.probeIntervalMs);
    if (isDriven(this.current.state) || this.probing || this.timer === undefined || this.stopping.signal.aborted) return;
    const left = this.nextProbeAt - Date.now();
    if (left <= cap) return;
    clearTimeout(this.timer);
    this.schedule(cap);
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
    this.nextProbeAt = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.nextProbeInMs = undefined;
      this.probing = this.probeOnce().finally(() => (this.probing = undefined));
    }, delayMs);
    this.timer.unref();
  }

  private async probeOnce(): Promise<void> {
    const result = await this.probe();
    if (this.stopping.signal.aborted) return;
    if (result.state === 'READY') {
      this.discovered = result.kinds ?? [];
      await this.retryKindIssues();
      if (this.stopping.signal.aborted) return;
    }
    const answered = result.state === 'READY' || result.state === 'VERSION_SKEW';
    // Counted before the health is told: its listeners ask whether a probe failed (MemberRuntimes keeps the caches).
    this.failures = answered ? 0 : this.failures + 1;
    this.record(result);
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
    if (this.stopping.signal.aborted || !isDriven(this.current.state)) return;
    this.record({ state: 'UNREACHABLE', message: `${error.code}: ${error.message}` });
    if (this.probing) return;
    clearTimeout(this.timer);
    this.schedule(this.options.probeIntervalMs);
  }

  /** base·2^(failures−1), at most the maximum, spread by ±20%; at most `waitingProbeMs` while targets wait on it. */
  private backoff(): number {
    const { backoffBaseMs, backoffMaxMs } = this.options;
    const delay = Math.round(Math.min(backoffMaxMs, backoffBaseMs * 2 ** Math.min(this.failures - 1, 30)) * (1 + JITTER * (this.random() * 2 - 1)));
    return this.now().getTime() < this.waitingUntil ? Math.min(delay, this.waitingCap()) : delay;
  }

  private waitingCap(): number {
    return this.options.waitingProbeMs ?? Math.min(5_000, this.options.backoffMaxMs);
  }

  /** A probe interval after the first time a kind is set aside, doubling with each further time, at most the maximum backoff. */
  private kindRetryDelay(attempts: number): number {
    const { probeIntervalMs, backoffMaxMs } = this.options;
    return Math.min(Math.max(backoffMaxMs, probeIntervalMs), probeIntervalMs * 2 ** Math.min(attempts - 1, 30));
  }

  /**
   * After a probe that answered: kinds set aside that discovery no longer finds are forgotten (not served, plainly);
   * those whose retry is due are tried with their one-object list, and given back to the runtime when it answers.
   */
  private async retryKindIssues(): Promise<void> {
    for (const [kind, issue] of [...this.issues]) {
      if (!this.discovered.includes(kind)) {
        this.issues.delete(kind);
        continue;
      }
      if (this.now().getTime() < issue.retryAt) continue;
      try {
        await issue.check();
        this.issues.delete(kind);
      } catch (error) {
        const attempts = issue.attempts + 1;
        this.setAside.set(kind, attempts);
        const state = httpStatusOf(error) === 404 ? 'NOT_SERVED' : 'FAILING';
        const reason = listFailure(issue.collection, error, this.options.requestTimeoutMs);
        this.issues.set(kind, {
          ...issue,
          state,
          reason,
          since: state === issue.state ? issue.since : this.now(),
          attempts,
          failedLists: issue.failedLists + 1,
          retryAt: this.now().getTime() + this.kindRetryDelay(attempts),
        });
      }
    }
  }

  /**
   * /version, then discovery. A reset of a reused connection is sent once more by the member request layer, for every
   * safe request (src/kube/resetRetry.ts, ADR 0073): the 300-cluster bench saw 35 members UNREACHABLE at the same
   * instant (ECONNRESET) after their simulator's process paused, when only the probe asked again.
   */
  private async probe(): Promise<Probe> {
    try {
      return await this.ask();
    } catch (error) {
      return this.failed(error);
    }
  }

  private async ask(): Promise<Probe> {
    const info = await this.versionApi.getCode();
    const version = versionOf(info);
    const serverVersion = info.gitVersion ?? `v${info.major}.${info.minor}`;
    if (!version || !inWindow(version, this.options.versions)) {
      const { min, max } = this.options.versions;
      return { state: 'VERSION_SKEW', message: `Kubernetes ${serverVersion} is outside ${min.major}.${min.minor}-${max.major}.${max.minor}`, serverVersion };
    }
    return { state: 'READY', message: null, serverVersion, kinds: await discoverKinds(this.kubeConfig, this.options.kindResources) };
  }

  /** A failure in one code, never the server's address or anything of the credentials. */
  private failed(error: unknown): Probe {
    const status = error instanceof ApiException ? error.code : undefined;
    if (status === 401 || status === 403) return { state: 'UNAUTHORIZED', message: `HTTP ${status}: the credentials were refused` };
    return { state: 'UNREACHABLE', message: failureMessage(error, this.options.requestTimeoutMs) };
  }

  /** A probe's answer with the kinds set aside (ADR 0066): left out of `kinds`, said in the message, DEGRADED while one fails. */
  private withKindIssues(probe: Probe): Probe {
    if (probe.state !== 'READY' || this.issues.size === 0) return probe;
    const kinds = (probe.kinds ?? this.current.kinds).filter((kind) => !this.issues.has(kind));
    const described = [...this.issues].map(([kind, issue]) =>
      issue.state === 'NOT_SERVED'
        ? `${kind} not served (${issue.reason}, though discovery lists it)`
        : `${kind} cannot be read (${issue.reason}; ${issue.failedLists} failed list${issue.failedLists === 1 ? '' : 's'} in a row, retrying with backoff)`,
    );
    const failing = [...this.issues.values()].some((issue) => issue.state === 'FAILING');
    return { ...probe, state: failing ? 'DEGRADED' : 'READY', message: described.join('; '), kinds };
  }

  private record(answer: Probe): void {
    const probe = this.withKindIssues(answer);
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
