import { Counter, Histogram, type Registry } from 'prom-client';

export interface AgentPoolMetrics {
  recreations: Counter<'reason'>;
  recreationSeconds: Histogram<'reason'>;
  forceDeletions: Counter;
}

const cache = new WeakMap<Registry, AgentPoolMetrics>();

/** The agent-pool metrics on `registry` (created once per registry). */
export function agentPoolMetrics(registry: Registry): AgentPoolMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const metrics: AgentPoolMetrics = {
    recreations: new Counter({
      name: 'rollplane_agent_recreations_total',
      help: 'DHCP agents deleted and recreated, by reason (drift, missing, uid-mismatch, force-deleted, mode-switch).',
      labelNames: ['reason'],
      registers: [registry],
    }),
    recreationSeconds: new Histogram({
      name: 'rollplane_agent_recreation_seconds',
      help: 'From deletion of the old DHCP agent to readiness of the new one.',
      labelNames: ['reason'],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
      registers: [registry],
    }),
    forceDeletions: new Counter({
      name: 'rollplane_agent_force_deletions_total',
      help: 'Agent pods stuck Terminating on a NotReady node that were force-deleted.',
      registers: [registry],
    }),
  };
  cache.set(registry, metrics);
  return metrics;
}
