/**
 * The correctness side of the agent-rollout benchmark, counted where the pods live (the simulator's store): how many
 * agent pods each pool got created during the measured window (each agent must be recreated exactly once) and the
 * most pools that were without a Ready agent at the same moment (never more than the rollout's maxUnavailable).
 * An agent pod is the vm-dhcp-controller's (upstream's labels, which rollplane's manifests copy), so the same count
 * holds whether rollplane or the simulated upstream controller recreates it.
 */
import type { KubeObject, StoreEvent } from '../src/sim/types.js';

const AGENT_LABEL = 'network.harvesterhci.io/vm-dhcp-controller';
const POOL_NAMESPACE_LABEL = 'network.harvesterhci.io/ippool-namespace';
const POOL_NAME_LABEL = 'network.harvesterhci.io/ippool-name';

export interface AgentChecks {
  /** Pools that had an agent when the window opened. */
  pools: number;
  /** Pools whose agent was created exactly once, more than once, and not at all during the window. */
  createdOnce: number;
  createdMoreThanOnce: number;
  notCreated: number;
  /** The most pools without a Ready agent at any one moment. */
  maxDown: number;
}

function poolOf(pod: KubeObject): string | undefined {
  const labels = pod.metadata.labels;
  if (labels?.[AGENT_LABEL] !== 'agent') return undefined;
  return `${labels[POOL_NAMESPACE_LABEL] ?? ''}/${labels[POOL_NAME_LABEL] ?? ''}`;
}

function isReady(pod: KubeObject): boolean {
  return (
    !pod.metadata.deletionTimestamp && (pod.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True')
  );
}

export class AgentTracker {
  /** pool → its Ready agent pods (by uid). */
  private readonly ready = new Map<string, Set<string>>();
  private readonly created = new Map<string, number>();
  private down = 0;
  private maxDown = 0;

  constructor(pods: Iterable<KubeObject>) {
    for (const pod of pods) {
      const pool = poolOf(pod);
      if (pool === undefined) continue;
      const set = this.ready.get(pool) ?? new Set<string>();
      this.ready.set(pool, set);
      if (isReady(pod)) set.add(pod.metadata.uid ?? '');
    }
    for (const set of this.ready.values()) if (set.size === 0) this.down++;
    this.maxDown = this.down;
  }

  /** Feed every pod event of the window. */
  onEvent(event: StoreEvent): void {
    if (event.resource.plural !== 'pods' || event.resource.group !== '') return;
    const pod = event.object;
    const pool = poolOf(pod);
    if (pool === undefined) return;
    if (event.type === 'ADDED') this.created.set(pool, (this.created.get(pool) ?? 0) + 1);
    let set = this.ready.get(pool);
    if (!set) {
      set = new Set();
      this.ready.set(pool, set);
      this.down++;
    }
    const before = set.size;
    const uid = pod.metadata.uid ?? '';
    if (event.type !== 'DELETED' && isReady(pod)) set.add(uid);
    else set.delete(uid);
    if (before > 0 && set.size === 0) this.down++;
    else if (before === 0 && set.size > 0) this.down--;
    this.maxDown = Math.max(this.maxDown, this.down);
  }

  checks(): AgentChecks {
    let createdOnce = 0;
    let createdMoreThanOnce = 0;
    let notCreated = 0;
    for (const pool of this.ready.keys()) {
      const n = this.created.get(pool) ?? 0;
      if (n === 1) createdOnce++;
      else if (n > 1) createdMoreThanOnce++;
      else notCreated++;
    }
    return { pools: this.ready.size, createdOnce, createdMoreThanOnce, notCreated, maxDown: this.maxDown };
  }
}
