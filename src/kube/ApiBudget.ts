import { Counter, Histogram, type Registry } from 'prom-client';
import { type Clock, systemClock } from '../util/clock.js';
import { TokenBucket } from '../util/TokenBucket.js';
import { CONFIG_DEFAULTS } from '../config.js';

export interface ApiBudgetOptions {
  /** Sustained requests per second; default ROLLPLANE_KUBE_QPS's (src/config.ts). */
  qps?: number;
  /** Requests allowed at once after a quiet period; default ROLLPLANE_KUBE_BURST's. */
  burst?: number;
  clock?: Clock;
  registry?: Registry;
}

const cache = new WeakMap<Registry, { wait: Histogram; requests: Counter }>();

function metricsFor(registry: Registry): { wait: Histogram; requests: Counter } {
  let m = cache.get(registry);
  if (!m) {
    m = {
      wait: new Histogram({
        name: 'rollplane_kube_client_rate_limiter_wait_seconds',
        help: 'Time Kubernetes API requests waited for the client-side rate limit (QPS/burst)',
        buckets: [0, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers: [registry],
      }),
      requests: new Counter({
        name: 'rollplane_kube_client_requests_total',
        help: 'Kubernetes API requests that passed the client-side rate limit (including watches)',
        registers: [registry],
      }),
    };
    cache.set(registry, m);
  }
  return m;
}

/**
 * The one client-side rate limit for every Kubernetes request of the process (client-go's QPS/burst): every typed
 * API call and every watch takes a token before it is sent.
 */
export class ApiBudget {
  readonly bucket: TokenBucket;
  private readonly metrics: { wait: Histogram; requests: Counter } | undefined;
  /** Requests admitted so far (for tests and diagnostics). */
  admitted = 0;
  /** Total ms waited. */
  waitedMs = 0;

  constructor(options: ApiBudgetOptions = {}) {
    this.bucket = new TokenBucket(options.qps ?? CONFIG_DEFAULTS.kube.qps, options.burst ?? CONFIG_DEFAULTS.kube.burst, options.clock ?? systemClock);
    this.metrics = options.registry ? metricsFor(options.registry) : undefined;
  }

  async take(): Promise<void> {
    const waited = await this.bucket.wait();
    this.admitted++;
    this.waitedMs += waited;
    this.metrics?.wait.observe(waited / 1000);
    this.metrics?.requests.inc();
  }
}
