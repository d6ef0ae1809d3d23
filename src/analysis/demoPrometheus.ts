import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { freeLoopbackPort } from '../util/localProcess.js';
import { findPrometheusBinary, type LocalPrometheus, PROMETHEUS_NOT_INSTALLED, type ScrapeTarget, startLocalPrometheus } from './localPrometheus.js';

/**
 * The analysis demo's Prometheus (`ROLLPLANE_SIM_PROMETHEUS=on`, docs/analysis.md): the machine's own Prometheus
 * (Debian's package; nothing is downloaded), scraping the embedded simulator and its simulated members, and used as
 * rollplane's Prometheus when ROLLPLANE_PROMETHEUS_URL is unset. Its loopback port is chosen before the service starts
 * (the gate types read the URL first); it is started once the simulators run, since they are what it scrapes.
 */
export interface DemoPrometheus {
  /** The configuration with rollplane's Prometheus set to this one (unless one was given). */
  config: Config;
  /** Starts it, scraping `targets`; `stop` ends it. */
  start(targets: readonly ScrapeTarget[]): Promise<{ stop(): Promise<void> }>;
}

/** How often the demo's Prometheus scrapes (a template's `rate(…[30s])` sees 6 samples). */
const DEMO_SCRAPE_MS = 5000;

export async function planDemoPrometheus(config: Config, logger: Logger): Promise<DemoPrometheus | undefined> {
  if (config.kube.mode !== 'sim' || config.sim.prometheus !== 'on') return undefined;
  if (!findPrometheusBinary()) {
    logger.warn(`ROLLPLANE_SIM_PROMETHEUS=on: ${PROMETHEUS_NOT_INSTALLED}; analysis and alert gates are unavailable (refused at submit)`);
    return undefined;
  }
  const port = await freeLoopbackPort();
  const url = `http://127.0.0.1:${port}`;
  const own = config.gates.prometheusUrl === undefined;
  return {
    config: own ? { ...config, gates: { ...config.gates, prometheusUrl: url } } : config,
    async start(targets) {
      const prometheus: LocalPrometheus = await startLocalPrometheus({ targets, scrapeIntervalMs: DEMO_SCRAPE_MS, port });
      logger.info(
        { url: prometheus.url, jobs: targets.map((t) => t.job), rollplanePrometheus: own },
        `demo Prometheus started, scraping the simulators${own ? ": rollplane's Prometheus" : ' (ROLLPLANE_PROMETHEUS_URL is set: not used by rollplane)'}`,
      );
      return { stop: () => prometheus.stop() };
    },
  };
}
