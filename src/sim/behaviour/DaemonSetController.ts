import type { KubeObject, StoreEvent } from '../types.js';
import type { Controller } from './ControllerRuntime.js';
import type { BehaviourContext } from './context.js';
import { isActivePod, isTerminating, keyOf, podAvailability, scaledValue, templateHash } from './kube.js';
import { podFitsNode, toleratesNode } from './nodeMatch.js';
import type { RevisionStore } from './RevisionStore.js';
import { createGeneratedPod, deletePod, minReadySecondsOf, ownerKey, writeStatus } from './workload.js';

const HASH_LABEL = 'controller-revision-hash';

interface NodeState {
  node: string;
  fresh: KubeObject[];
  old: KubeObject[];
}

/**
 * One pod per eligible node (nodeSelector, required node affinity, tolerated taints). RollingUpdate without surge deletes old pods
 * while at most maxUnavailable nodes lack an available pod; with maxSurge it starts the new pod beside the old one
 * on up to maxSurge nodes at a time and deletes the old pod once the new one is available. OnDelete only replaces
 * pods that someone deleted.
 */
export class DaemonSetController implements Controller {
  readonly name = 'daemonset';

  constructor(
    private readonly ctx: BehaviourContext,
    private readonly revisions: RevisionStore,
  ) {}

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { plural, group } = event.resource;
    if (group === 'apps' && plural === 'daemonsets') return event.type === 'DELETED' ? [] : [keyOf(event.object)];
    if (group === '' && plural === 'pods') {
      const key = ownerKey(event, 'DaemonSet');
      return key ? [key] : [];
    }
    if (group === '' && plural === 'nodes') {
      const eligibilityMayChange =
        event.type !== 'MODIFIED' ||
        JSON.stringify(event.previous?.metadata.labels) !== JSON.stringify(event.object.metadata.labels) ||
        JSON.stringify(event.previous?.spec?.taints) !== JSON.stringify(event.object.spec?.taints);
      return eligibilityMayChange ? [...this.ctx.index.all('daemonsets')].map(keyOf) : [];
    }
    return [];
  }

  initialKeys(): string[] {
    return [...this.ctx.index.all('daemonsets')].map(keyOf);
  }

  reconcile(key: string): number | undefined {
    const ds = this.ctx.index.get('daemonsets', key);
    if (!ds || isTerminating(ds)) return undefined;
    const hash = templateHash(ds.spec?.template);
    this.revisions.ensure(ds, hash, { [HASH_LABEL]: hash });
    const template = ds.spec?.template;
    const eligible = new Set<string>();
    for (const node of this.ctx.index.all('nodes'))
      if (podFitsNode(template?.spec, node) && toleratesNode(template?.spec, node, true)) eligible.add(node.metadata.name);

    const minReady = minReadySecondsOf(ds);
    const now = this.ctx.scheduler.now();
    const available = (pod: KubeObject) => podAvailability(pod, minReady, now).available;
    const states = new Map<string, NodeState>();
    for (const node of eligible) states.set(node, { node, fresh: [], old: [] });
    for (const pod of this.ctx.index.ownedBy(ds.metadata.uid, 'pods')) {
      if (!isActivePod(pod)) continue;
      const state = states.get(pod.spec?.nodeName ?? '');
      if (!state)
        deletePod(this.ctx, pod); // its node went away or no longer matches
      else if (pod.metadata.labels?.[HASH_LABEL] === hash) state.fresh.push(pod);
      else state.old.push(pod);
    }

    const create = (node: string) =>
      createGeneratedPod(
        this.ctx,
        ds,
        template,
        ds.metadata.name,
        { [HASH_LABEL]: hash, 'pod-template-generation': String(ds.metadata.generation ?? 1) },
        node,
      );

    for (const state of states.values()) {
      // Duplicates (e.g. after a strategy change): keep the best pod of each kind.
      state.fresh = keepOne(this.ctx, state.fresh, available);
      state.old = keepOne(this.ctx, state.old, available);
      if (state.fresh.length === 0 && state.old.length === 0) state.fresh.push(create(state.node));
    }

    if ((ds.spec?.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate') {
      const desired = eligible.size;
      const ru = ds.spec?.updateStrategy?.rollingUpdate ?? {};
      const maxSurge = scaledValue(ru.maxSurge, desired, true, 0);
      let maxUnavailable = scaledValue(ru.maxUnavailable, desired, true, 1);
      if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
      if (maxSurge > 0) this.surge(states, maxSurge, available, create);
      else this.replace(states, maxUnavailable, available);
    }
    return this.updateStatus(ds, hash, eligible);
  }

  /** maxSurge = 0: delete old pods, unavailable ones first, while the unavailable-node budget allows. */
  private replace(states: Map<string, NodeState>, maxUnavailable: number, available: (pod: KubeObject) => boolean): void {
    let unavailable = 0;
    for (const s of states.values()) if (![...s.fresh, ...s.old].some(available)) unavailable++;
    const candidates: KubeObject[] = [];
    for (const s of states.values()) {
      for (const pod of s.old) {
        if (!available(pod))
          deletePod(this.ctx, pod); // already counted as unavailable
        else candidates.push(pod);
      }
    }
    for (const pod of candidates) {
      if (unavailable >= maxUnavailable) break;
      deletePod(this.ctx, pod);
      unavailable++;
    }
  }

  /** maxSurge > 0: start the new pod beside the old on up to maxSurge nodes; drop the old once the new is available. */
  private surge(states: Map<string, NodeState>, maxSurge: number, available: (pod: KubeObject) => boolean, create: (node: string) => KubeObject): void {
    let surging = 0;
    const candidates: string[] = [];
    for (const s of states.values()) {
      const old = s.old[0];
      const fresh = s.fresh[0];
      if (!old) continue;
      if (fresh) {
        if (available(fresh)) for (const pod of s.old) deletePod(this.ctx, pod);
        else surging++;
      } else if (!available(old)) {
        create(s.node); // nothing available to protect on this node: replace at once
      } else {
        candidates.push(s.node);
      }
    }
    for (const node of candidates) {
      if (surging >= maxSurge) break;
      create(node);
      surging++;
    }
  }

  private updateStatus(ds: KubeObject, hash: string, eligible: Set<string>): number | undefined {
    const current = this.ctx.index.get('daemonsets', keyOf(ds));
    if (!current) return undefined;
    const minReady = minReadySecondsOf(current);
    const now = this.ctx.scheduler.now();
    const byNode = new Map<string, KubeObject[]>();
    for (const pod of this.ctx.index.ownedBy(current.metadata.uid, 'pods')) {
      if (!isActivePod(pod)) continue;
      const node = pod.spec?.nodeName ?? '';
      byNode.set(node, [...(byNode.get(node) ?? []), pod]);
    }
    let scheduled = 0;
    let misscheduled = 0;
    let ready = 0;
    let available = 0;
    let updated = 0;
    let recheck: number | undefined;
    for (const [node, pods] of byNode) {
      if (!eligible.has(node)) {
        misscheduled++;
        continue;
      }
      scheduled++;
      const checks = pods.map((p) => podAvailability(p, minReady, now));
      if (pods.some((p) => p.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True'))) ready++;
      if (checks.some((c) => c.available)) available++;
      for (const c of checks) if (c.recheckInMs !== undefined) recheck = Math.min(recheck ?? Infinity, c.recheckInMs);
      if (pods.some((p) => p.metadata.labels?.[HASH_LABEL] === hash)) updated++;
    }
    const status: Record<string, unknown> = {
      observedGeneration: current.metadata.generation ?? 1,
      desiredNumberScheduled: eligible.size,
      currentNumberScheduled: scheduled,
      numberMisscheduled: misscheduled,
      numberReady: ready,
      updatedNumberScheduled: updated,
      numberAvailable: available,
      numberUnavailable: Math.max(0, eligible.size - available),
    };
    writeStatus(this.ctx, this.ctx.types.daemonsets, current, status);
    return recheck;
  }
}

/** Keeps the most useful pod (available, then oldest) and deletes the rest. */
function keepOne(ctx: BehaviourContext, pods: KubeObject[], available: (pod: KubeObject) => boolean): KubeObject[] {
  if (pods.length <= 1) return pods;
  const sorted = [...pods].sort(
    (a, b) => Number(available(b)) - Number(available(a)) || (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
  );
  for (const pod of sorted.slice(1)) deletePod(ctx, pod);
  return sorted.slice(0, 1);
}
