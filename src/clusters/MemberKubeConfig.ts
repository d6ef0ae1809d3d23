import type { RequestOptions } from 'node:https';
import { type ApiType, type Configuration, createConfiguration, type KubeConfig, ServerConfiguration } from '@kubernetes/client-node';
import { ApiBudget } from '../kube/ApiBudget.js';
import { BudgetedKubeConfig, reuseConnections } from '../kube/createKubeClients.js';
import { MemberHttpLibrary } from '../kube/memberHttpLibrary.js';
import { boundedSignal } from '../util/boundedSignal.js';
import type { MemberNetwork, MemberNetworkError } from './memberNetwork.js';

export interface MemberClientOptions {
  /** The member's own client-side rate limit (ROLLPLANE_MEMBER_CLUSTER_QPS / _BURST): one member never spends another's. */
  qps: number;
  burst: number;
  /** Every request but a watch is aborted after this long (ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS). */
  requestTimeoutMs: number;
  /** Aborts every request in flight when the connection stops. */
  signal: AbortSignal;
  /** The operator's deny list and the caps on answers (memberNetwork.ts); none: neither. */
  network?: MemberNetwork | undefined;
  /** Told when an answer of the member's runtime (a list, a watch) passed its cap: the connection's health says so. */
  onRefused?: ((error: MemberNetworkError) => void) | undefined;
}

/**
 * A member cluster's KubeConfig: its own API budget (src/kube/ApiBudget.ts, as the local connection's) and a bound on
 * every request. Typed API calls pass through `applySecurityAuthentication` with their request context, after the
 * budget's wait: the timer starts when the request is sent, so waiting for the budget is not counted against it. The
 * per-target writes (src/kube/jsonRequests.ts) skip that door and ask `requestSignal()` after the budget's wait: without
 * it a write to a black-holed member was never aborted, and the rollout's admission pass waited on it for ever.
 * Watches (long-running by design) go through `applyToHTTPSOptions` and are bounded by their own timeoutSeconds.
 */
export class MemberKubeConfig extends BudgetedKubeConfig {
  private constructor(private readonly options: MemberClientOptions) {
    super();
  }

  /** A copy of `source` (its clusters, users, contexts and current context) with the member's budget and timeouts. */
  static from(source: KubeConfig, options: MemberClientOptions): MemberKubeConfig {
    const kc = new MemberKubeConfig(options);
    kc.loadFromOptions({ clusters: source.clusters, users: source.users, contexts: source.contexts, currentContext: source.getCurrentContext() });
    kc.budget = new ApiBudget({ qps: options.qps, burst: options.burst });
    // Keep-alive connections, as local's: a probe every 30 s would otherwise open (and TLS-handshake) four each time.
    kc.releaseConnections = reuseConnections(kc);
    options.network?.guard(kc, options.onRefused);
    return kc;
  }

  /** A member's safe requests reset on a reused connection are sent once more (src/kube/resetRetry.ts, ADR 0073). */
  override get retriesResets(): boolean {
    return true;
  }

  /**
   * client-node's own `makeApiClient`, with the member request layer's fetch (MemberHttpLibrary: the retry after a
   * reset, and a body cut off by the timeout named as such). Every typed call to a member is built here: the probe's
   * /version, discovery, the informers' lists, the writes client-node's generated path makes.
   */
  override makeApiClient<T extends ApiType>(apiClientType: new (config: Configuration) => T): T {
    const cluster = this.getCurrentCluster();
    if (!cluster) throw new Error('No active cluster!');
    const config = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: this },
      httpApi: new MemberHttpLibrary(this),
    });
    return new apiClientType(config);
  }

  /**
   * Asked before every request is sent (after the budget's wait): the member's runtime sets it to stamp the replica's
   * User-Agent and to refuse a write this replica may no longer make (its shard's hold past the renew deadline by its
   * own clock, docs/adr/0059-shard-leases.md). Throws to refuse.
   */
  beforeSend: ((request: { method: string; url: string; setHeader(name: string, value: string): void }) => void) | undefined;

  /** Closes the kept connections' sockets: the connection goes away (src/kube/createKubeClients.ts). */
  releaseConnections: () => void = () => {};

  /** Requests that skip client-node's generated path (watches, the hot writes of src/kube/jsonRequests.ts) pass here. */
  override async applyToHTTPSOptions(opts: Parameters<KubeConfig['applyToHTTPSOptions']>[0]): Promise<void> {
    await super.applyToHTTPSOptions(opts);
    if (!this.beforeSend) return;
    const request = opts as RequestOptions;
    request.headers = request.headers ?? {};
    const headers = request.headers as Record<string, string | number | string[]>;
    // A watch names no method here: it reads.
    this.beforeSend({
      method: request.method ?? 'GET',
      url: request.path ?? '',
      setHeader: (name, value) => {
        headers[name] = value;
      },
    });
  }

  override async applySecurityAuthentication(context: Parameters<KubeConfig['applySecurityAuthentication']>[0]): Promise<void> {
    // The budget's wait, then the request's bound (requestSignal), as for local's.
    await super.applySecurityAuthentication(context);
    this.beforeSend?.({ method: context.getHttpMethod(), url: context.getUrl(), setHeader: (name, value) => context.setHeaderParam(name, value) });
  }

  /** The same bound for the per-target writes, which take the plain JSON path (src/kube/jsonRequests.ts). */
  override requestSignal(): AbortSignal {
    return boundedSignal(this.options.requestTimeoutMs, this.options.signal);
  }
}
