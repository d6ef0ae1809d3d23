/**
 * What the fleet's agents would export to Prometheus, served on the simulator's `GET /metrics` (text format 0.0.4) so
 * that a real Prometheus can scrape it and analysis can measure a rollout by more than readiness (issue 33):
 *
 * - DHCP agents (the vm-dhcp-controller's agent pod of each IPPool): `sim_dhcp_leases_total` and `sim_dhcp_errors_total`,
 *   labelled `pool_namespace`, `pool`;
 * - virtual clusters' API servers (the `apiserver` StatefulSet pods in each cluster namespace):
 *   `sim_apiserver_requests_total` and `sim_apiserver_request_errors_total`, labelled `cluster_namespace` and, when its
 *   VirtualCluster says so (status.clusterNamespace), `virtual_cluster` (`namespace/name`);
 * - node agents (the cloud-api-adaptor pods, one per node): `sim_peer_pod_starts_total` and
 *   `sim_peer_pod_start_errors_total`, labelled `node`.
 * Every series also carries `pod` and `version` (the image's tag).
 *
 * A pod exports only while it is Running and Ready, and its counters count from the moment it became Ready, at a fixed
 * rate (`AGENT_RATES`): nothing is stored, a scrape computes them from the objects and the clock, and a replaced pod
 * starts again from 0 — a counter reset, as a restarted process gives, which `rate()` and `increase()` handle.
 *
 * An image matching a degraded glob (default `*:degraded*`) stays Ready — readiness is not health — but works badly:
 * its DHCP agent serves no leases and counts errors, its API server answers half its requests with errors, its node
 * agent starts no peer pods and counts failures. A tag with `errors-<n>` is healthy but fails n requests a second
 * (ratesOf). (`*:bad*` images, by contrast, never pull: src/sim/behaviour.)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { conditionOf, isPodReady } from './behaviour/kube.js';
import { globToRegExp, NODE_AGENT_LABEL } from './behaviour/context.js';
import { AGENT_LABEL, POOL_NAME_LABEL, POOL_NAMESPACE_LABEL } from './behaviour/upstream/vmDhcpChart.js';
import { Resources } from './store/resources.js';
import type { KubeObject, ObjectStore } from './types.js';

export const DEFAULT_DEGRADED_IMAGES = ['*:degraded*'];

/** Events per second of a Ready agent, healthy and degraded. */
export const AGENT_RATES = {
  healthy: { leases: 2, dhcpErrors: 0, requests: 10, requestErrors: 0, peerStarts: 0.5, peerStartErrors: 0 },
  degraded: { leases: 0, dhcpErrors: 1, requests: 10, requestErrors: 5, peerStarts: 0, peerStartErrors: 0.5 },
} as const;

export interface AgentMetricsOptions {
  /** Image globs that run degraded. Default DEFAULT_DEGRADED_IMAGES. */
  degradedImagePatterns?: readonly string[];
  /** Milliseconds since the epoch; default Date.now (the behaviour's scheduler when it has one). */
  now?: () => number;
}

type Rates = { [K in keyof (typeof AGENT_RATES)['healthy']]: number };

/**
 * A tag that names an error rate, `…errors-<n>…` (e.g. `v0.3.1-errors-13`): a healthy agent that also fails n requests
 * a second (DHCP errors, API server 5xx, peer-pod start failures). Two such releases differ by how much worse one is
 * than the other, which is what a baseline comparison against the pools not yet upgraded measures (issue 33, ADR 0071).
 * A degraded image stays degraded.
 */
function ratesOf(image: string, degraded: boolean): Rates {
  if (degraded) return AGENT_RATES.degraded;
  const tag = tagOf(image);
  const at = tag.indexOf('errors-');
  const errors = at < 0 ? Number.NaN : Number.parseFloat(tag.slice(at + 'errors-'.length));
  if (!Number.isFinite(errors) || errors < 0) return AGENT_RATES.healthy;
  return { ...AGENT_RATES.healthy, dhcpErrors: errors, requestErrors: Math.min(errors, AGENT_RATES.healthy.requests), peerStartErrors: errors };
}

interface Family {
  name: string;
  help: string;
  rate: (rates: Rates) => number;
}

const DHCP: Family[] = [
  { name: 'sim_dhcp_leases_total', help: 'DHCP leases the IPPool agent served.', rate: (r) => r.leases },
  { name: 'sim_dhcp_errors_total', help: 'DHCP requests the IPPool agent failed.', rate: (r) => r.dhcpErrors },
];
const APISERVER: Family[] = [
  { name: 'sim_apiserver_requests_total', help: "Requests the virtual cluster's API server answered.", rate: (r) => r.requests },
  { name: 'sim_apiserver_request_errors_total', help: "Requests the virtual cluster's API server answered with a 5xx.", rate: (r) => r.requestErrors },
];
const PEER: Family[] = [
  { name: 'sim_peer_pod_starts_total', help: "Peer pods the node's cloud-api-adaptor started.", rate: (r) => r.peerStarts },
  { name: 'sim_peer_pod_start_errors_total', help: "Peer pods the node's cloud-api-adaptor failed to start.", rate: (r) => r.peerStartErrors },
];

function tagOf(image: string): string {
  const colon = image.lastIndexOf(':');
  return colon > image.lastIndexOf('/') ? image.slice(colon + 1) : '';
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** The exposition text of every Ready agent's counters at `now`. */
export function agentMetricsText(store: ObjectStore, options: AgentMetricsOptions = {}): string {
  const degraded = (options.degradedImagePatterns ?? DEFAULT_DEGRADED_IMAGES).map(globToRegExp);
  const now = (options.now ?? Date.now)();
  const vcType = store.resourceType('tenancy.x-k8s.io', 'virtualclusters');
  const virtualClusters = new Map<string, string>();
  for (const vc of vcType ? store.list(vcType) : []) {
    const clusterNamespace = vc.status?.clusterNamespace;
    if (typeof clusterNamespace === 'string') virtualClusters.set(clusterNamespace, `${vc.metadata.namespace}/${vc.metadata.name}`);
  }
  const lines = new Map<Family, string[]>();
  const add = (families: Family[], pod: KubeObject, labels: Record<string, string>) => {
    const image = String(pod.spec?.containers?.[0]?.image ?? '');
    const since = Date.parse(String(conditionOf(pod, 'Ready')?.lastTransitionTime ?? ''));
    const seconds = Number.isFinite(since) ? Math.max(0, (now - since) / 1000) : 0;
    const rates = ratesOf(
      image,
      degraded.some((re) => re.test(image)),
    );
    const all = { ...labels, pod: pod.metadata.name, version: tagOf(image) };
    const text = Object.entries(all)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
    for (const family of families) {
      const list = lines.get(family) ?? [];
      list.push(`${family.name}{${text}} ${Math.floor(family.rate(rates) * seconds)}`);
      lines.set(family, list);
    }
  };
  for (const pod of store.list(Resources.pods)) {
    if (pod.status?.phase !== 'Running' || !isPodReady(pod)) continue;
    const labels = pod.metadata.labels ?? {};
    if (labels[AGENT_LABEL] === 'agent') {
      add(DHCP, pod, { pool_namespace: labels[POOL_NAMESPACE_LABEL] ?? '', pool: labels[POOL_NAME_LABEL] ?? '' });
    } else if (labels['component-name'] === 'apiserver') {
      const namespace = pod.metadata.namespace ?? '';
      const vc = virtualClusters.get(namespace);
      add(APISERVER, pod, { cluster_namespace: namespace, ...(vc ? { virtual_cluster: vc } : {}) });
    } else if (labels[NODE_AGENT_LABEL] === 'true' || labels.app === 'cloud-api-adaptor') {
      add(PEER, pod, { node: String(pod.spec?.nodeName ?? '') });
    }
  }
  const out: string[] = [];
  for (const family of [...DHCP, ...APISERVER, ...PEER]) {
    out.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} counter`, ...(lines.get(family) ?? []));
  }
  return `${out.join('\n')}\n`;
}

/** Serves `GET /metrics`; false for any other path (an ApiHooks.extraRoute). */
export function agentMetricsRoute(store: ObjectStore, options: AgentMetricsOptions = {}) {
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    const body = agentMetricsText(store, options);
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  };
}
