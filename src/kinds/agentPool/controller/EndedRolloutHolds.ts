import type { V1Pod } from '@kubernetes/client-node';
import type { CacheReader } from '../../../controller/Informer.js';
import type { Result } from '../../../controller/Controller.js';
import type { RolloutService } from '../../../domain/RolloutService.js';
import { ACTIVE_ROLLOUT_STATES } from '../../../domain/rolloutStates.js';
import { rollplaneHolder } from './names.js';
import { type PoolHoldWrites, RELEASE } from './PoolHoldWrites.js';
import { poolRunsImage } from './podFacts.js';
import type { IPPool } from './types.js';
import type { VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';

/** How long an answer about the rollouts is reused (every held pool's reconcile asks). */
const ROLLOUTS_RECHECK_MS = 2_000;
/** A hold of a rollout that ended but has not finished yet (or while another is active) is looked at again after this long. */
const UNFINISHED_RECHECK_MS = 5_000;

export interface EndedRolloutHoldsDeps {
  /** rollplane's hold writes of this cluster (PoolHoldWrites.ts): the sweep's removal is conditional and fenced too. */
  holds: PoolHoldWrites;
  pods: CacheReader<V1Pod>;
  agentNamespace: string;
  controller: VmDhcpControllerWatch;
  rollouts: Pick<RolloutService, 'list' | 'get'>;
  /** The cluster these pools are in: only its active rollouts keep a stray hold on (another cluster's never touch it). */
  cluster: string;
  /**
   * Whether the rollout's finish runs here now (AgentPoolDriver.finishing). The engine marks a rollout finished once
   * its finish returned, which for a member this replica does not write to is at once, while the holder's finish still
   * waits for the controller's own rolling update: its holds stay theirs until it is done (attack 25, F1).
   */
  finishingHere?: (rolloutId: string) => boolean;
  now?: () => number;
}

/**
 * Takes off a hold of rollplane's that a rollout's hold write put on a pool after the rollout had finished (attack 18,
 * M1): the write got no answer in time (its request timeout, or the member's), the rollout moved on, and the write
 * landed later. The rollout's finish took its holds off before that, and nobody else would: the pool stayed held by a
 * rollout that was over, and upstream never moved it again. The rule is finish's own: a hold on a pool that runs the
 * controller's image holds nothing back, and comes off. Only while no agent-pool rollout is active in this cluster (an active one's
 * finish sweeps every such hold, and its prepare may count on a hold it saw), and only once the holding rollout has
 * finished (its finish may be keeping holds on purpose: an image write it has not settled, ImageWriteFence.ts).
 */
export class EndedRolloutHolds {
  private readonly now: () => number;
  private active: { at: number; any: boolean } | undefined;
  private readonly finished = new Map<string, { at: number; finished: boolean; ended: boolean }>();

  constructor(private readonly deps: EndedRolloutHoldsDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Looks at one pool beside a controller that deploys agents; a requeue while its holder's finish is to come. */
  async sweep(pool: IPPool): Promise<Result | undefined> {
    const holder = rollplaneHolder(pool.metadata?.annotations);
    if (holder === undefined) return undefined;
    const state = this.deps.controller.state();
    if (state.kind !== 'agents' || !poolRunsImage(pool, state.image, this.deps.pods, this.deps.agentNamespace)) return undefined;
    const rollout = await this.rolloutOf(holder);
    if (!rollout.ended) return undefined;
    // Rare (a hold that landed after its rollout ended): looked at again until the rule allows it.
    if (!rollout.finished || this.deps.finishingHere?.(holder) || (await this.anyActive())) return { requeueAfterMs: UNFINISHED_RECHECK_MS };
    // Only onto the pool as seen here: a pool changed since is decided again by the same rule.
    const rule = (current: IPPool) =>
      rollplaneHolder(current.metadata?.annotations) === holder && poolRunsImage(current, state.image, this.deps.pods, this.deps.agentNamespace);
    await this.deps.holds.write(pool, RELEASE, (current) => (rule(current) ? RELEASE : undefined));
    return undefined;
  }

  private async anyActive(): Promise<boolean> {
    const now = this.now();
    if (this.active && now - this.active.at < ROLLOUTS_RECHECK_MS) return this.active.any;
    const page = await this.deps.rollouts.list({ kind: 'AGENT_POOL', states: ACTIVE_ROLLOUT_STATES, clusters: [this.deps.cluster] }, 1, undefined);
    this.active = { at: now, any: page.items.length > 0 };
    return this.active.any;
  }

  /** Whether the rollout ended (a state past the active ones; a rollout not found counts as ended) and finished. */
  private async rolloutOf(id: string): Promise<{ ended: boolean; finished: boolean }> {
    const now = this.now();
    const known = this.finished.get(id);
    if (known && (known.finished || now - known.at < ROLLOUTS_RECHECK_MS)) return known;
    const rollout = await this.deps.rollouts.get(id);
    const ended = !rollout || !ACTIVE_ROLLOUT_STATES.includes(rollout.state);
    const answer = { at: now, ended, finished: !rollout || (ended && rollout.engineState.finished === true) };
    this.finished.set(id, answer);
    // A few rollouts' answers at most are worth keeping: the held pools name one or two.
    if (this.finished.size > 100) this.finished.delete(this.finished.keys().next().value!);
    return answer;
  }
}
