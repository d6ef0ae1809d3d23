import { describe, it } from 'vitest';
import {
  findPrometheusBinary,
  type LocalPrometheus,
  PROMETHEUS_NOT_INSTALLED,
  type ScrapeTarget,
  startLocalPrometheus,
} from '../../src/analysis/localPrometheus.js';
import { AGENT_NAMESPACE, agentPodName } from '../../src/sim/fleet.js';
import type { Simulator } from '../../src/sim/index.js';
import { Resources } from '../../src/sim/store/resources.js';
import { until } from './until.js';

/**
 * A real Prometheus for a test (Debian's `prometheus`, started by src/analysis/localPrometheus.ts on a free port with a
 * temporary configuration and data directory), scraping the targets given at a short interval. Analysis tests measure
 * against it: never a stand-in that answers what the test expects.
 *
 * Without the binary, `describeWithPrometheus` reports its tests "skipped: no prometheus binary" — unless
 * ROLLPLANE_REQUIRE_PROMETHEUS=1 (CI sets it in .ci/run, which installs the package), which turns the skip into a
 * failure so that CI always runs them.
 */

export const prometheusRequired = process.env.ROLLPLANE_REQUIRE_PROMETHEUS === '1';
export const NO_PROMETHEUS = 'skipped: no prometheus binary (apt-get install prometheus)';

export interface TestPrometheus extends LocalPrometheus {
  /** An instant query's vector as [labels, value] pairs (throws on a non-success answer). */
  vector(query: string): Promise<{ metric: Record<string, string>; value: number }[]>;
  /**
   * Waits until `query` returns at least `min` series (default 1), looking once per scrape interval — never faster,
   * as nothing new can appear in between — and returns them.
   */
  waitForSeries(query: string, options?: { min?: number; timeoutMs?: number }): Promise<{ metric: Record<string, string>; value: number }[]>;
}

export async function startTestPrometheus(
  targets: readonly ScrapeTarget[],
  scrapeIntervalMs = 1000,
  options: { rules?: string } = {},
): Promise<TestPrometheus> {
  const server = await startLocalPrometheus({ targets, scrapeIntervalMs, ...options });
  const vector: TestPrometheus['vector'] = async (query) => {
    const response = await fetch(`${server.url}/api/v1/query?${new URLSearchParams({ query })}`, { signal: AbortSignal.timeout(10_000) });
    const body = (await response.json()) as {
      status: string;
      error?: string;
      data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success' || body.data?.resultType !== 'vector') throw new Error(`query ${query} answered ${JSON.stringify(body)}`);
    return body.data.result.map((sample) => ({ metric: sample.metric, value: Number(sample.value[1]) }));
  };
  return {
    ...server,
    stop: () => server.stop(),
    vector,
    async waitForSeries(query, { min = 1, timeoutMs = 60_000 } = {}) {
      return until(
        `${min} series of ${query} in Prometheus`,
        async () => {
          const series = await vector(query);
          return series.length >= min ? series : undefined;
        },
        { timeoutMs, intervalMs: server.scrapeIntervalMs },
      );
    },
  };
}

/**
 * `describe` for tests that need a Prometheus binary: they start it themselves (startTestPrometheus) once their scrape
 * target runs. Without one, skipped with NO_PROMETHEUS, or failed when ROLLPLANE_REQUIRE_PROMETHEUS=1.
 */
export function describeWithPrometheus(name: string, body: () => void): void {
  if (findPrometheusBinary()) {
    describe(name, body);
    return;
  }
  if (prometheusRequired) {
    describe(name, () => {
      it('needs a Prometheus binary (ROLLPLANE_REQUIRE_PROMETHEUS=1)', () => {
        throw new Error(`${PROMETHEUS_NOT_INSTALLED}, and ROLLPLANE_REQUIRE_PROMETHEUS=1`);
      });
    });
    return;
  }
  describe.skip(`${name} (${NO_PROMETHEUS})`, body);
}

/**
 * Sets the image of a pool's DHCP agent pod in the simulator (a `degraded*` tag stays Ready and degrades its metrics)
 * and returns the image it had. For a simulator without upstream controllers, which would put it back.
 */
export function setDhcpAgentImage(sim: Simulator, pool: string, image: string, namespace = 'default'): string {
  const pod = structuredClone(sim.store.get(Resources.pods, AGENT_NAMESPACE, agentPodName(namespace, pool))!);
  const before: string = pod.spec.containers[0].image;
  pod.spec.containers[0].image = image;
  sim.store.update(Resources.pods, pod);
  return before;
}
