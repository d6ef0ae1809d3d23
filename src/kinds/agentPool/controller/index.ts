import type { V1Deployment, V1Node, V1Pod } from '@kubernetes/client-node';
import { feed, enqueueByLabels } from '../../../controller/sources.js';
import type { Controller } from '../../../controller/Controller.js';
import type { CacheReader, Informer } from '../../../controller/Informer.js';
import type { AgentPoolQueries } from '../plan.js';
import type { ControllerHost } from '../../../controllers/host.js';
import { kindHost } from '../../../controllers/kindHost.js';
import { AgentPoolDriver } from './AgentPoolDriver.js';
import { PoolHoldWrites } from './PoolHoldWrites.js';
import { EndedRolloutHolds } from './EndedRolloutHolds.js';
import { AgentPoolReconciler } from './AgentPoolReconciler.js';
import { agentPoolQueries } from './queries.js';
import { agentPoolMetrics } from './metrics.js';
import type { ConfiguredAgentMode } from './mode.js';
import { agentPodInputsChanged, controllerSignature, podSignature, poolInputsChanged, poolSignature, readyOf } from './predicates.js';
import { ControllerImageReconciler } from './ControllerImageReconciler.js';
import { ControllerImageLever } from './ControllerImageLever.js';
import {
  IPPOOL_GROUP,
  IPPOOL_PLURAL,
  IPPOOL_VERSION,
  LABEL_AGENT,
  LABEL_AGENT_VALUE,
  LABEL_POOL_NAME,
  LABEL_POOL_NAMESPACE,
  NAD_GROUP,
  NAD_PLURAL,
  NAD_VERSION,
  splitNetworkName,
} from './names.js';
import type { IPPool, NetworkAttachmentDefinition, RecreationRecord } from './types.js';
import { CHART_COMPONENT_LABEL, CHART_NAME, CHART_NAME_LABEL, CONTROLLER_SELECTOR, VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';
import { AGENT_POOL_DEFAULTS } from '../settings.js';
import { LOCAL_CLUSTER } from '../../../domain/clusters/model.js';

export { agentName } from './names.js';
export { AGENT_MODE_MISMATCH } from './mode.js';

export interface AgentPoolOptions {
  /** `auto` (default), `coexist` or `direct` (docs/adr/0017). */
  mode?: ConfiguredAgentMode;
  /** The vm-dhcp-controller Deployment; default: the one carrying the chart's labels. */
  vmDhcpController?: { namespace: string; name: string };
  /** Where agents run; default `harvester-system`. */
  agentNamespace?: string;
  /** Image of agents for pools that have none recorded yet; default the upstream v1.8.1 agent (a current release). */
  agentImage?: string;
  /** Seconds a Terminating agent on a NotReady node waits before it is force-deleted; default 120; null disables. */
  stuckGraceSeconds?: number | null;
  /** Concurrent pool reconciles; default 16. */
  workers?: number;
  /** ServiceAccount of the agents rollplane creates in direct mode; default the vm-dhcp-controller chart's agent account. */
  serviceAccountName?: string;
  /** Coalescing window of the engine notifications; default 100 ms, growing with the number of pools (1 s at 10,000). */
  notifyIntervalMs?: number;
  now?: () => number;
}

// The defaults are the configuration table's (src/config.ts, docs/adr/0037): written there only.
export const DEFAULT_AGENT_NAMESPACE = AGENT_POOL_DEFAULTS.agentNamespace;
export const DEFAULT_AGENT_IMAGE = AGENT_POOL_DEFAULTS.agentImage;
/**
 * The chart's `<fullname>-agent` for release `harvester-vm-dhcp-controller` (its README's install command). The old
 * default, `vm-dhcp-controller-agent`, is created by no chart: the ServiceAccount admission refused every agent.
 */
export const DEFAULT_AGENT_SERVICE_ACCOUNT = AGENT_POOL_DEFAULTS.serviceAccountName;

export interface AgentPoolRuntime {
  driver: AgentPoolDriver;
  queries: AgentPoolQueries;
  controller: Controller;
  controllerWatch: VmDhcpControllerWatch;
  informers: {
    pools: Informer<IPPool>;
    pods: CacheReader<V1Pod>;
    controllers: Informer<V1Deployment>;
    nads: Informer<NetworkAttachmentDefinition>;
    nodes: Informer<V1Node>;
  };
}

/**
 * Agent pools on a ControllerHost: informers for IPPools, agent Pods, the vm-dhcp-controller Deployment, NADs and
 * Nodes; the pool reconciler fed by all of them (pod events requeue their pool through its labels, NAD events the
 * pools on that network, node events the pools whose agent runs there, a change of the controller every pool); the
 * rollout driver; and the cache-backed queries.
 */
export function setupAgentPools(controllerHost: ControllerHost, options: AgentPoolOptions = {}): AgentPoolRuntime {
  const host = kindHost(controllerHost, 'AGENT_POOL');
  const configuredMode = options.mode ?? AGENT_POOL_DEFAULTS.mode;
  const agentNamespace = options.agentNamespace ?? DEFAULT_AGENT_NAMESPACE;
  const { clients } = host;

  const pools = host.informers.custom<IPPool>(
    { group: IPPOOL_GROUP, version: IPPOOL_VERSION, plural: IPPOOL_PLURAL },
    {
      network: (pool) => {
        const ns = pool.metadata?.namespace ?? '';
        const nad = splitNetworkName(pool.spec?.networkName ?? '', ns);
        return [`${nad.namespace}/${nad.name}`];
      },
    },
  );
  const poolIndex = {
    pool: (obj: V1Pod) => {
      const labels = obj.metadata?.labels ?? {};
      return labels[LABEL_POOL_NAME] ? [`${labels[LABEL_POOL_NAMESPACE] ?? ''}/${labels[LABEL_POOL_NAME]}`] : [];
    },
  };
  // Agent pods are a view of the cluster-wide pods informer, which node agents need anyway: one list and watch of pods
  // and one copy of each, instead of a second watch (and cache) of the agent namespace.
  const allPods = host.informers.pods();
  const pods = allPods.view({
    name: 'agent-pods',
    filter: (pod) => pod.metadata?.namespace === agentNamespace && pod.metadata?.labels?.[LABEL_AGENT] === LABEL_AGENT_VALUE,
    indexers: { ...poolIndex, node: (pod) => (pod.spec?.nodeName ? [pod.spec.nodeName] : []) },
  });
  // The vm-dhcp-controller: the configured Deployment (by name), or any carrying the chart's labels.
  const configured = options.vmDhcpController;
  const controllers = configured
    ? host.informers.deployments('vmdhcp-controller', { namespace: configured.namespace, fieldSelector: `metadata.name=${configured.name}` })
    : host.informers.deployments('vmdhcp-controller', { labelSelector: CONTROLLER_SELECTOR });
  // The controller's own pods: its rolling update is over only once none runs the old --image (VmDhcpControllerWatch.rolledOut).
  const controllerPods = allPods.view({
    name: 'vmdhcp-controller-pods',
    filter: (pod) => pod.metadata?.labels?.[CHART_NAME_LABEL] === CHART_NAME && pod.metadata?.labels?.[CHART_COMPONENT_LABEL] === 'controller',
  });
  const controllerWatch = new VmDhcpControllerWatch(controllers, configured, controllerPods);
  const nads = host.informers.custom<NetworkAttachmentDefinition>({ group: NAD_GROUP, version: NAD_VERSION, plural: NAD_PLURAL });
  const nodes = host.informers.nodes();

  // The rollout engine re-evaluates a rollout when one of its pools (or that pool's agent) changes in a way its
  // observation can see. Notifications are coalesced (one per pool per window): each one costs the engine a pass over
  // the whole rollout, and one recreation produces a dozen watch events. The more pools, the longer the window.
  const notifier = host.notifier({ windowMs: () => options.notifyIntervalMs ?? Math.min(2000, Math.max(100, pools.list().length / 10)) });
  // observe() also waits for the recreation's record to go: beside the vm-dhcp-controller nothing in the cluster changes
  // when it does (upstream wrote the pool and the agent is Ready before rollplane records), so its removal notifies too.
  const recreations = host.history.once<RecreationRecord>((namespace, name) => notifier.notify({ namespace, name }));
  const serviceAccountName = options.serviceAccountName ?? DEFAULT_AGENT_SERVICE_ACCOUNT;
  const lever = new ControllerImageLever({
    clients,
    controller: controllerWatch,
    warn: (message, fields) => host.logger.warn({ controller: 'agentpool', ...fields }, message),
    history: host.history,
  });
  // One per cluster: a lost hold write is settled before the next write to its pool, whoever makes it.
  const holds = new PoolHoldWrites(clients);
  const driver = new AgentPoolDriver({
    clients,
    pools,
    pods,
    recreations,
    agentNamespace,
    serviceAccountName,
    configuredMode,
    controller: controllerWatch,
    lever,
    holds,
    ...(host.rollouts ? { rolloutState: async (id: string) => (await host.rollouts!.get(id))?.state } : {}),
  });
  const metrics = agentPoolMetrics(host.registry);
  const reconciler = new AgentPoolReconciler({
    clients,
    history: host.history,
    recreations,
    metrics,
    logger: host.logger.child({ controller: 'agentpool' }),
    pools,
    pods,
    nads,
    nodes,
    settings: { namespace: agentNamespace, serviceAccountName },
    defaultImage: options.agentImage ?? DEFAULT_AGENT_IMAGE,
    controllerState: () => controllerWatch.state(),
    ...(host.rollouts
      ? {
          endedRolloutHolds: new EndedRolloutHolds({
            holds,
            pods,
            agentNamespace,
            controller: controllerWatch,
            rollouts: host.rollouts,
            cluster: host.cluster ?? LOCAL_CLUSTER,
            finishingHere: (rolloutId) => driver.finishing(rolloutId),
          }),
        }
      : {}),
    stuckGraceSeconds: options.stuckGraceSeconds === undefined ? AGENT_POOL_DEFAULTS.stuckGraceSeconds : options.stuckGraceSeconds,
    ...(options.now ? { now: options.now } : {}),
  });
  const controller = host.controller({ name: 'agentpool', reconciler, workers: options.workers ?? AGENT_POOL_DEFAULTS.workers });

  const byLabels = enqueueByLabels<V1Pod>(LABEL_POOL_NAMESPACE, LABEL_POOL_NAME);
  feed(pools, controller, { predicates: [poolInputsChanged()] });
  feed(pods, controller, { map: byLabels, predicates: [agentPodInputsChanged()] });
  // Who deploys agents may have changed (installed, removed, --no-agent, a new --image): every pool is looked at again.
  const allPools = () => pools.list().map((p) => ({ namespace: p.metadata!.namespace!, name: p.metadata!.name! }));
  feed(controllers, controller, { map: allPools, predicates: [{ update: (o, n) => controllerSignature(o) !== controllerSignature(n) }] });
  // A change of the controller's --image is history: planned when a rollout of rollplane set it, else unplanned (a
  // helm upgrade) — the drift query shows its effect on held pools; active coexistence rollouts fail on it (haltReason).
  const changes = host.controller({
    name: 'vmdhcp-controller-changes',
    workers: 1,
    reconciler: new ControllerImageReconciler({ watch: controllerWatch, lever, host, history: host.history }),
  });
  feed(controllers, changes, { map: () => [{ namespace: '', name: 'vm-dhcp-controller' }] });
  feed(nads, controller, {
    map: (nad) =>
      pools.byIndex('network', `${nad.metadata?.namespace}/${nad.metadata?.name}`).map((p) => ({ namespace: p.metadata!.namespace!, name: p.metadata!.name! })),
  });
  feed(nodes, controller, {
    map: (node) => pods.byIndex('node', node.metadata?.name ?? '').flatMap((pod) => byLabels(pod)),
    predicates: [{ create: () => false, update: (o, n) => readyOf(o) !== readyOf(n) }],
  });

  notifier.watch(pools, (pool) => [{ namespace: pool.metadata?.namespace, name: pool.metadata?.name ?? '' }], poolSignature);
  notifier.watch(pods, (pod) => byLabels(pod), podSignature);
  notifier.watch(controllers, () => allPools(), controllerSignature);

  const queries = agentPoolQueries({
    pools,
    pods,
    agentNamespace,
    controller: controllerWatch,
    rolloutMode: () => driver.mode(),
    admitImage: (image) => driver.admitImage(image),
    // The hold's rollout marker in a dry run names no rollout yet.
    preflight: (image, targets) => driver.preflight(image, targets, 'preflight'),
  });
  return { driver, queries, controller, controllerWatch, informers: { pools, pods, controllers, nads, nodes } };
}
