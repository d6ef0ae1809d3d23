import type { KubeObject, ResourceType, StoreEvent } from '../types.js';
import type { BehaviourContext } from './context.js';
import type { Controller } from './ControllerRuntime.js';
import { isoTime, isPodReady, isTerminating } from './kube.js';

/** Set on the agent pod that currently serves DHCP (the Lease holder, after its initial sync). */
export const AGENT_SERVING_ANNOTATION = 'sim.rollplane.io/dhcp-serving';

/** How long a vanished holder's Lease stays valid (it renewed until it disappeared), as client-go's default. */
const LEASE_DURATION_SECONDS = 15;

function leaseNameOf(pod: KubeObject): string | undefined {
  for (const container of pod.spec?.containers ?? []) {
    const env: { name: string; value?: string }[] = container.env ?? [];
    const ipPoolRef = env.find((e) => e.name === 'IPPOOL_REF');
    const lease = env.find((e) => e.name === 'LEASE_NAME');
    if (ipPoolRef && lease?.value) return lease.value;
  }
  return undefined;
}

/**
 * The DHCP agents of Deployment mode (spec/agent-pools.md), as far as the API can see them: each agent pod (a pod
 * whose container has `IPPOOL_REF` and `LEASE_NAME`) takes part in leader election on the Lease `LEASE_NAME` in its
 * own namespace (POD_NAMESPACE). Only the holder serves DHCP — marked by an annotation once it has loaded the pool's
 * leases ("InitialSyncDone"). A holder that is terminating or NotReady releases the Lease first (client-go's
 * ReleaseOnCancel) and stops serving; a holder that vanished without releasing (force-deleted, crashed) keeps the
 * Lease until it expires. A candidate acquires only a free Lease, so at most one agent serves at any time.
 */
export class AgentLeaderElection implements Controller {
  readonly name = 'agent-leader-election';
  readonly delayMs = 0;
  private readonly leases: ResourceType | undefined;
  /** lease key → names of agent pods taking part. */
  private readonly members = new Map<string, Set<string>>();
  /** lease key → when its holder was first seen gone. */
  private readonly vanishedAt = new Map<string, number>();
  /** `namespace/pod` of agents seen terminating: they release their Lease on SIGTERM, before they are gone. */
  private readonly terminating = new Set<string>();

  constructor(private readonly ctx: BehaviourContext) {
    this.leases = ctx.store.resourceType('coordination.k8s.io', 'leases');
  }

  keysFor(event: StoreEvent): string[] {
    if (!this.leases || event.resource.plural !== 'pods' || event.resource.group !== '') return [];
    const lease = leaseNameOf(event.object);
    if (!lease) return [];
    const key = `${event.object.metadata.namespace}/${lease}`;
    const members = this.members.get(key) ?? new Set<string>();
    if (event.type === 'DELETED') members.delete(event.object.metadata.name);
    else members.add(event.object.metadata.name);
    if (isTerminating(event.object)) this.terminating.add(`${event.object.metadata.namespace}/${event.object.metadata.name}`);
    this.members.set(key, members);
    return [key];
  }

  initialKeys(): string[] {
    if (!this.leases) return [];
    const keys = new Set<string>();
    for (const pod of this.ctx.store.list(this.ctx.types.pods)) {
      const lease = leaseNameOf(pod);
      if (!lease) continue;
      const key = `${pod.metadata.namespace}/${lease}`;
      const members = this.members.get(key) ?? new Set<string>();
      members.add(pod.metadata.name);
      this.members.set(key, members);
      keys.add(key);
    }
    return [...keys];
  }

  reconcile(key: string): number | undefined {
    const leases = this.leases!;
    const [namespace, name] = key.split('/') as [string, string];
    const now = this.ctx.scheduler.now();
    const pod = (podName: string) => this.ctx.store.get(this.ctx.types.pods, namespace, podName);
    let lease = this.ctx.store.get(leases, namespace, name);
    let holder: string = lease?.spec?.holderIdentity ?? '';

    if (holder) {
      const holderPod = pod(holder);
      if (!holderPod && this.terminating.has(`${namespace}/${holder}`)) {
        // It terminated gracefully: it released the Lease on its way out.
        holder = '';
      } else if (!holderPod) {
        const since = this.vanishedAt.get(key) ?? now;
        this.vanishedAt.set(key, since);
        const remaining = since + LEASE_DURATION_SECONDS * 1000 - now;
        if (remaining > 0) return remaining;
        holder = '';
      } else if (isTerminating(holderPod) || !isPodReady(holderPod)) {
        this.serving(holderPod, false);
        holder = '';
      }
      if (!holder) lease = this.writeLease(lease, namespace, name, '', now);
    }
    this.vanishedAt.delete(key);
    for (const name of this.terminating) if (name.startsWith(`${namespace}/`) && !pod(name.slice(namespace.length + 1))) this.terminating.delete(name);
    if (holder) {
      this.serving(pod(holder)!, true);
      return undefined;
    }
    const candidates = [...(this.members.get(key) ?? [])]
      .map(pod)
      .filter((p): p is KubeObject => p !== undefined && !isTerminating(p) && isPodReady(p))
      .sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name));
    const next = candidates[0];
    if (!next) return undefined;
    this.writeLease(lease, namespace, name, next.metadata.name, now);
    this.serving(next, true);
    return undefined;
  }

  private writeLease(lease: KubeObject | undefined, namespace: string, name: string, holder: string, now: number): KubeObject {
    const leases = this.leases!;
    const stamp = isoTime(now).replace('Z', '000Z');
    if (!lease) {
      return this.ctx.store.create(leases, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
        spec: { holderIdentity: holder, leaseDurationSeconds: LEASE_DURATION_SECONDS, acquireTime: stamp, renewTime: stamp, leaseTransitions: 0 },
      });
    }
    const spec = { ...lease.spec, holderIdentity: holder };
    if (holder) Object.assign(spec, { acquireTime: stamp, renewTime: stamp, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 });
    return this.ctx.store.update(leases, { ...lease, spec });
  }

  private serving(pod: KubeObject, on: boolean): void {
    const has = pod.metadata.annotations?.[AGENT_SERVING_ANNOTATION] === 'true';
    if (has === on) return;
    const annotations = { ...pod.metadata.annotations };
    if (on) annotations[AGENT_SERVING_ANNOTATION] = 'true';
    else delete annotations[AGENT_SERVING_ANNOTATION];
    this.ctx.store.update(this.ctx.types.pods, { ...pod, metadata: { ...pod.metadata, annotations } });
  }
}
