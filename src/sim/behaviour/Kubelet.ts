import type { KubeObject, StoreEvent } from '../types.js';
import type { Controller } from './ControllerRuntime.js';
import { type BehaviourContext, NODE_AGENT_LABEL } from './context.js';
import { conditionOf, controllerRef, isoTime, keyOf, splitKey, isTerminating } from './kube.js';
import { isNodeReady } from './nodeMatch.js';
import { type ContainerStatus, containersOf, pullBackOffContainer, readinessGatesPass, runningContainer, withCondition } from './podStatus.js';

type Stage = 'pending' | 'backoff' | 'starting' | 'ready' | 'terminating';

/**
 * The simulated kubelet of every node. A bound pod moves Pending → Running (after podStartMs) → Ready (after
 * podReadyMs, and only when every readiness gate is True); a bad image ends in ImagePullBackOff. A pod being deleted
 * on a Ready node is removed after podTerminateMs (once its finalizers are gone); on a NotReady node nothing answers,
 * so it stays Terminating until someone force-deletes it. Peer pods on a node restart when the node's agent is
 * replaced, and the replacement agent becomes Ready only once they are Ready again, as upstream's startup probe
 * makes it (spec/node-agents.md).
 */
export class Kubelet implements Controller {
  readonly name = 'kubelet';
  readonly delayMs = 0;
  /** pod uid → the stage it was last seen in, and since when (drives the timed transitions). */
  private readonly stages = new Map<string, { stage: Stage; since: number }>();
  /** node → uid of the node-agent pod last started there. */
  private readonly agentOnNode = new Map<string, string>();
  /**
   * Replacement agents whose startup waits for the node's peer pods to be Ready again after `since` (upstream's
   * `/startup` probe), keyed by agent uid.
   */
  private readonly awaitingPeers = new Map<string, { key: string; node: string; since: number }>();
  private nextIp = 0;

  constructor(private readonly ctx: BehaviourContext) {}

  keysFor(event: StoreEvent): string[] {
    const { plural, group } = event.resource;
    if (group !== '') return [];
    if (plural === 'pods') {
      if (event.type === 'DELETED') {
        this.stages.delete(event.object.metadata.uid ?? '');
        this.awaitingPeers.delete(event.object.metadata.uid ?? '');
        return [];
      }
      const nodeName: string | undefined = event.object.spec?.nodeName;
      if (!nodeName) return [];
      const keys = [keyOf(event.object)];
      if (this.awaitingPeers.size > 0 && event.object.spec?.runtimeClassName === this.ctx.peerRuntimeClass) {
        for (const agent of this.awaitingPeers.values()) if (agent.node === nodeName) keys.push(agent.key);
      }
      return keys;
    }
    if (plural === 'nodes') {
      const before = event.previous ? isNodeReady(event.previous) : undefined;
      const after = event.type === 'DELETED' ? undefined : isNodeReady(event.object);
      return before === after ? [] : this.ctx.index.podKeysOn(event.object.metadata.name);
    }
    return [];
  }

  initialKeys(): string[] {
    const keys: string[] = [];
    for (const pod of this.ctx.index.all('pods')) {
      if (!pod.spec?.nodeName) continue;
      keys.push(keyOf(pod));
      if (this.isNodeAgent(pod) && pod.status?.phase === 'Running') this.agentOnNode.set(pod.spec.nodeName, pod.metadata.uid ?? '');
    }
    return keys;
  }

  reconcile(key: string): number | undefined {
    let pod = this.ctx.index.get('pods', key);
    const nodeName: string | undefined = pod?.spec?.nodeName;
    if (!pod || !nodeName) return undefined;
    const node = this.ctx.index.get('nodes', nodeName);
    if (!node) return undefined; // no such node: no kubelet will ever run it
    const now = this.ctx.scheduler.now();

    if (isTerminating(pod)) return this.terminate(pod, node, now);
    if (!isNodeReady(node)) {
      this.stages.delete(pod.metadata.uid ?? '');
      return this.markNotReady(pod, now);
    }
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return undefined;

    if (conditionOf(pod, 'PodScheduled')?.status !== 'True' || !pod.status?.hostIP) {
      const status = {
        ...pod.status,
        phase: pod.status?.phase ?? 'Pending',
        hostIP: hostIpOf(node),
        hostIPs: [{ ip: hostIpOf(node) }],
        qosClass: pod.status?.qosClass ?? 'BestEffort',
        conditions: withCondition(pod.status?.conditions, 'PodScheduled', 'True', now),
      };
      if (this.ctx.delays.podStartMs > 0) {
        this.writeStatus(pod, status);
        return undefined; // our own write comes back as an event and continues from here
      }
      // No start delay: report scheduling and the container start in one write (one event less per pod at scale).
      pod = { ...pod, status };
    }

    const statuses: ContainerStatus[] = pod.status?.containerStatuses ?? [];
    const started = phase === 'Running' && statuses.length > 0 && statuses.every((s) => s.state?.running);
    const wantsBadImage = containersOf(pod).some((c) => this.isBadImage(c.image));
    const drifted = started && containersOf(pod).some((c) => statuses.find((s) => s.name === c.name)?.image !== c.image);

    if (!started || drifted) {
      const stage: Stage = statuses.some((s) => s.state?.waiting?.reason === 'ImagePullBackOff') && wantsBadImage ? 'backoff' : 'pending';
      if (stage === 'backoff') return undefined; // never pulls; a fixed image (spec change) re-enters 'pending'
      const wait = this.due(pod, 'pending', this.ctx.delays.podStartMs, now);
      if (wait > 0) return wait;
      this.start(pod, node, now, wantsBadImage, drifted);
      return undefined;
    }

    const containersReady = conditionOf(pod, 'ContainersReady')?.status === 'True';
    if (!containersReady) {
      const wait = this.due(pod, 'starting', this.ctx.delays.podReadyMs, now);
      if (wait > 0) return wait;
      const awaiting = this.awaitingPeers.get(pod.metadata.uid ?? '');
      if (awaiting) {
        if (!this.peersReadySince(nodeName, awaiting.since)) return undefined; // a peer pod's event brings us back
        this.awaitingPeers.delete(pod.metadata.uid ?? '');
      }
      let conditions = withCondition(pod.status?.conditions, 'ContainersReady', 'True', now);
      const gated = { ...pod, status: { ...pod.status, conditions } };
      conditions = readinessGatesPass(gated)
        ? withCondition(conditions, 'Ready', 'True', now)
        : withCondition(conditions, 'Ready', 'False', now, 'ReadinessGatesNotReady', 'the status of pod readiness gate is not "True"');
      this.writeStatus(pod, {
        ...pod.status,
        conditions,
        containerStatuses: statuses.map((s) => ({ ...s, ready: true })),
      });
      return undefined;
    }

    this.stages.set(pod.metadata.uid ?? '', { stage: 'ready', since: now });
    const gatesPass = readinessGatesPass(pod);
    const ready = conditionOf(pod, 'Ready')?.status === 'True';
    if (gatesPass !== ready) {
      this.writeStatus(pod, {
        ...pod.status,
        conditions: gatesPass
          ? withCondition(pod.status?.conditions, 'Ready', 'True', now)
          : withCondition(pod.status?.conditions, 'Ready', 'False', now, 'ReadinessGatesNotReady', 'the status of pod readiness gate is not "True"'),
      });
    }
    return undefined;
  }

  /** Returns how long until `delay` has passed since the pod entered `stage` (0 when due). */
  private due(pod: KubeObject, stage: Stage, delay: number, now: number): number {
    const uid = pod.metadata.uid ?? '';
    let entry = this.stages.get(uid);
    if (!entry || entry.stage !== stage) {
      entry = { stage, since: now };
      this.stages.set(uid, entry);
    }
    return Math.max(0, entry.since + delay - now);
  }

  private start(pod: KubeObject, node: KubeObject, now: number, badImage: boolean, restart: boolean): void {
    const previous: ContainerStatus[] = pod.status?.containerStatuses ?? [];
    const containerStatuses = containersOf(pod).map((c) => {
      const before = previous.find((s) => s.name === c.name);
      const restarts = restart && before ? before.restartCount + 1 : (before?.restartCount ?? 0);
      return this.isBadImage(c.image) ? pullBackOffContainer(c.name, c.image, restarts) : runningContainer(c.name, c.image, now, restarts, false);
    });
    let conditions = withCondition(pod.status?.conditions, 'Initialized', 'True', now);
    conditions = withCondition(conditions, 'ContainersReady', 'False', now, 'ContainersNotReady', notReadyMessage(containerStatuses));
    conditions = withCondition(conditions, 'Ready', 'False', now, 'ContainersNotReady', notReadyMessage(containerStatuses));
    const status: Record<string, unknown> = {
      ...pod.status,
      phase: badImage && !restart ? 'Pending' : 'Running',
      conditions,
      containerStatuses,
      hostIP: hostIpOf(node),
      hostIPs: [{ ip: hostIpOf(node) }],
      startTime: pod.status?.startTime ?? isoTime(now),
    };
    if (!badImage || restart) {
      const ip = pod.status?.podIP ?? (pod.spec?.hostNetwork ? hostIpOf(node) : this.allocateIp());
      status.podIP = ip;
      status.podIPs = [{ ip }];
    }
    const inits: { name: string; image: string }[] = pod.spec?.initContainers ?? [];
    if (inits.length > 0 && !badImage) {
      status.initContainerStatuses = inits.map((c) => ({
        name: c.name,
        image: c.image,
        imageID: runningContainer(c.name, c.image, now, 0, false).imageID,
        ready: true,
        restartCount: 0,
        state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: isoTime(now), finishedAt: isoTime(now) } },
        lastState: {},
      }));
    }
    this.writeStatus(pod, status);
    if (!badImage && !restart && this.isNodeAgent(pod)) this.agentStarted(pod, now);
  }

  /** A new node agent started on a node that had another one: its peer pods restart (their VMs are re-attached). */
  private agentStarted(agent: KubeObject, now: number): void {
    const nodeName: string = agent.spec.nodeName;
    const previous = this.agentOnNode.get(nodeName);
    this.agentOnNode.set(nodeName, agent.metadata.uid ?? '');
    if (previous === undefined || previous === agent.metadata.uid) return;
    this.awaitingPeers.set(agent.metadata.uid ?? '', { key: keyOf(agent), node: nodeName, since: now });
    for (const pod of this.ctx.index.podsOn(nodeName)) {
      if (pod.spec?.runtimeClassName !== this.ctx.peerRuntimeClass || isTerminating(pod) || pod.status?.phase !== 'Running') continue;
      const statuses: ContainerStatus[] = pod.status?.containerStatuses ?? [];
      const restarted = statuses.map((s) =>
        runningContainer(s.name, s.image, now, s.restartCount + 1, false, {
          terminated: { exitCode: 137, reason: 'Error', finishedAt: isoTime(now) },
        }),
      );
      let conditions = withCondition(pod.status?.conditions, 'ContainersReady', 'False', now, 'ContainersNotReady', notReadyMessage(restarted));
      conditions = withCondition(conditions, 'Ready', 'False', now, 'ContainersNotReady', notReadyMessage(restarted));
      this.stages.set(pod.metadata.uid ?? '', { stage: 'starting', since: now });
      this.writeStatus(pod, { ...pod.status, conditions, containerStatuses: restarted });
    }
  }

  /** Every running peer pod on the node is Ready with a transition at or after `since`. */
  private peersReadySince(nodeName: string, since: number): boolean {
    return this.ctx.index.podsOn(nodeName).every((pod) => {
      if (pod.spec?.runtimeClassName !== this.ctx.peerRuntimeClass || isTerminating(pod) || pod.status?.phase !== 'Running') return true;
      const ready = conditionOf(pod, 'Ready');
      return ready?.status === 'True' && Date.parse(ready.lastTransitionTime ?? '') >= since;
    });
  }

  private terminate(pod: KubeObject, node: KubeObject, now: number): number | undefined {
    // On a NotReady node no kubelet confirms the termination: the pod stays Terminating until force-deleted.
    if (!isNodeReady(node)) return this.markNotReady(pod, now);
    const wait = this.due(pod, 'terminating', this.ctx.delays.podTerminateMs, now);
    if (wait > 0) return wait;
    // As the real kubelet: a grace-0 delete; the API server removes the pod once its finalizers are gone.
    const { namespace, name } = splitKey(keyOf(pod));
    try {
      this.ctx.store.delete(this.ctx.types.pods, namespace, name, {
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata.uid ?? '' },
      });
    } catch (error) {
      if ((error as { code?: number }).code !== 404 && (error as { code?: number }).code !== 409) throw error;
    }
    return undefined;
  }

  private markNotReady(pod: KubeObject, now: number): undefined {
    if (conditionOf(pod, 'Ready')?.status !== 'True' && conditionOf(pod, 'ContainersReady')?.status !== 'True') return undefined;
    let conditions = withCondition(pod.status?.conditions, 'ContainersReady', 'False', now, 'NodeNotReady', 'node is not ready');
    conditions = withCondition(conditions, 'Ready', 'False', now, 'NodeNotReady', 'node is not ready');
    const containerStatuses = (pod.status?.containerStatuses ?? []).map((s: ContainerStatus) => ({ ...s, ready: false }));
    this.writeStatus(pod, { ...pod.status, conditions, containerStatuses });
    return undefined;
  }

  private writeStatus(pod: KubeObject, status: Record<string, unknown>): void {
    // A fresh object and metadata over the stored pod's unchanged parts: handed over, not copied again.
    this.ctx.store.update(this.ctx.types.pods, { ...pod, metadata: { ...pod.metadata }, status }, 'status', { handOver: true });
  }

  private isBadImage(image: string): boolean {
    return this.ctx.badImages.some((re) => re.test(image));
  }

  private isNodeAgent(pod: KubeObject): boolean {
    if (pod.metadata.labels?.[NODE_AGENT_LABEL] === 'true') return true;
    const owner = controllerRef(pod);
    if (owner?.kind !== 'DaemonSet') return false;
    const ds = this.ctx.index.get('daemonsets', `${pod.metadata.namespace}/${owner.name}`);
    return ds?.metadata.labels?.[NODE_AGENT_LABEL] === 'true';
  }

  private allocateIp(): string {
    const n = this.nextIp++;
    return `10.42.${Math.floor(n / 250) % 256}.${(n % 250) + 2}`;
  }
}

function hostIpOf(node: KubeObject): string {
  const addresses: { type: string; address: string }[] = node.status?.addresses ?? [];
  return addresses.find((a) => a.type === 'InternalIP')?.address ?? '192.168.0.10';
}

function notReadyMessage(statuses: ContainerStatus[]): string {
  const names = statuses.filter((s) => !s.ready).map((s) => s.name);
  return `containers with unready status: [${names.join(' ')}]`;
}
