import { Counter, Histogram, type Registry } from 'prom-client';

/** Upstream's buckets for clusters_upgrade_seconds, in seconds. */
export const UPGRADE_SECONDS_BUCKETS = [0.1, 0.5, 1, 5, 10, 20, 30, 60, 90, 120, 300, 600, 900];
const LABELS = ['cluster_version', 'resource_version'] as const;

export interface VirtualClusterMetrics {
  seconds: Histogram<(typeof LABELS)[number]>;
  upgraded: Counter<(typeof LABELS)[number]>;
  failed: Counter<(typeof LABELS)[number]>;
}

/**
 * cluster-api-provider-nested's ClusterVersionPartialUpgrade metrics, names, labels and buckets unchanged, so existing
 * dashboards keep working. Registered once per registry.
 */
export function virtualClusterMetrics(registry: Registry): VirtualClusterMetrics {
  const existing = registry.getSingleMetric('clusters_upgrade_seconds');
  if (existing) {
    return {
      seconds: existing as Histogram<(typeof LABELS)[number]>,
      upgraded: registry.getSingleMetric('clusters_upgraded') as Counter<(typeof LABELS)[number]>,
      failed: registry.getSingleMetric('clusters_upgrade_failed') as Counter<(typeof LABELS)[number]>,
    };
  }
  return {
    seconds: new Histogram({
      name: 'clusters_upgrade_seconds',
      help: 'Duration of a virtual cluster control-plane upgrade (ClusterVersionPartialUpgrade), successful or not.',
      labelNames: LABELS,
      buckets: UPGRADE_SECONDS_BUCKETS,
      registers: [registry],
    }),
    upgraded: new Counter({
      name: 'clusters_upgraded',
      help: 'Virtual clusters upgraded (including those already on the desired version).',
      labelNames: LABELS,
      registers: [registry],
    }),
    failed: new Counter({
      name: 'clusters_upgrade_failed',
      help: 'Virtual cluster upgrades that failed.',
      labelNames: LABELS,
      registers: [registry],
    }),
  };
}
