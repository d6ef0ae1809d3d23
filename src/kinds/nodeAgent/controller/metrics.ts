import { Counter, Histogram, type Registry } from 'prom-client';

export interface NodeAgentMetrics {
  replaced(daemonSet: string, seconds: number): void;
  gateOpened(daemonSet: string): void;
}

const cache = new WeakMap<Registry, NodeAgentMetrics>();

/** The node-agent metrics on `registry` (created once per registry). */
export function nodeAgentMetrics(registry: Registry): NodeAgentMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const replacements = new Counter({
    name: 'rollplane_node_agent_replacements_total',
    help: "Node agents replaced by a rollout (new agent Ready and the node's peer pods back), by DaemonSet.",
    labelNames: ['daemonset'],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'rollplane_node_agent_replacement_seconds',
    help: "From admission of a node to its new agent Ready with the node's peer pods back.",
    labelNames: ['daemonset'],
    buckets: [0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const gates = new Counter({
    name: 'rollplane_node_agent_gates_opened_total',
    help: `Agent pods whose readiness gate rollplane set once their node's peer pods were back, by DaemonSet.`,
    labelNames: ['daemonset'],
    registers: [registry],
  });
  const metrics: NodeAgentMetrics = {
    replaced(daemonSet, s) {
      replacements.inc({ daemonset: daemonSet });
      seconds.observe({ daemonset: daemonSet }, s);
    },
    gateOpened(daemonSet) {
      gates.inc({ daemonset: daemonSet });
    },
  };
  cache.set(registry, metrics);
  return metrics;
}
