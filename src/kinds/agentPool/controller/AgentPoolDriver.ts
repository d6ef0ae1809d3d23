import type { V1Pod } from '@kubernetes/client-node';
import type { CacheReader, Informer } from '../../../controller/Informer.js';
import { agentPoolRollbackRules, matchesPoolSelection, type PoolSelection } from '../plan.js';
import type { RollbackRules } from '../../../domain/launchRules.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../../domain/ports.js';
import type { Rollout } from '../../../domain/RolloutService.js';
import { ACTIVE_ROLLOUT_STATES, type RolloutState } from '../../../domain/rolloutStates.js';
import { AppError, ConflictError, isAppError, NotFoundError, ValidationError } from '../../../errors.js';
import { parseAgentImage, vmDhcpRelease } from '../../../util/vmDhcpRelease.js';
import { PREFLIGHT_REFUSED } from '../../../controllers/dryRunRefusal.js';
import type { ControllerImageLever } from './ControllerImageLever.js';
import { isUnsettledImageWrite } from './ImageWriteFence.js';
import { dryRunAgentCreation, dryRunHolds } from './preflight.js';
import { kubeCall, type KubeClients } from '../../../kube/index.js';
import { type HoldAnnotations, holdFor, type PoolHoldWrites, RELEASE } from './PoolHoldWrites.js';
import type { RecordOnce } from '../../../controllers/RecordOnce.js';
import { resolveAgentMode, type AgentMode, type ConfiguredAgentMode } from './mode.js';
import { agentName, ANNOTATION_HELD_BY, ANNOTATION_HOLD, holdOf, IPPOOL_GROUP, IPPOOL_PLURAL, IPPOOL_VERSION, poolKey, rollplaneHolder } from './names.js';
import { isPodReady, podImage, poolRunsImage, pullFailure } from './podFacts.js';
import type { IPPool, RecreationRecord } from './types.js';
import { normalizeImage, type VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';

export interface AgentPoolDriverDeps {
  clients: KubeClients;
  pools: Informer<IPPool>;
  pods: CacheReader<V1Pod>;
  /** Recreation intents (shared with the reconciler): a target is done once its recreation is recorded. */
  recreations: RecordOnce<RecreationRecord>;
  agentNamespace: string;
  /** ServiceAccount of the agents rollplane creates in direct mode (its preflight dry-runs one). */
  serviceAccountName: string;
  configuredMode: ConfiguredAgentMode;
  controller: VmDhcpControllerWatch;
  /** The one way the controller's --image changes: through its owner (ControllerImageLever). */
  lever: ControllerImageLever;
  /** The one way rollplane's holds go on and come off a pool: conditional, and fenced when an answer is lost. */
  holds: PoolHoldWrites;
  /** The rollout's state in the history now (prepare asks before it writes the image); absent: not asked. */
  rolloutState?: (id: string) => Promise<RolloutState | undefined>;
  /** Conflict retries of one admission before giving up (the engine retries later). */
  maxConflictRetries?: number;
}

/** Whether a preflight's UNAVAILABLE refusal is the API server's own passing trouble (retried) rather than a refusal. */
function passing(error: AppError): boolean {
  const status = error.details.httpStatus as number | undefined;
  if (status === undefined) return true;
  if (status < 500 && status !== 429) return false;
  return !/denied the request|failed calling webhook/.test(error.message);
}

/** Concurrent hold writes in prepare. */
const HOLD_CONCURRENCY = 16;

/**
 * What a rollout does to agent pools, in one of two modes (docs/adr/0017):
 * - **coexist** (a vm-dhcp-controller deploys agents): prepare holds every pool not already at the new image
 *   (upstream's hold annotation, marked as rollplane's) and sets the controller's `--image`; admission releases one
 *   pool (removes rollplane's hold); upstream's own loops then replace the agent, which observe watches for. rollplane
 *   writes no `agentPodRef` and creates no agent.
 * - **direct** (no controller deploys agents): admission writes the image into `status.agentPodRef.image` and the
 *   reconciler replaces the agent, as upstream's loops would.
 */
export class AgentPoolDriver implements RolloutDriver {
  readonly kind = 'AGENT_POOL' as const;
  /** The prepare running now, if any: prepares run one at a time (see prepare). */
  private preparing: Promise<void> = Promise.resolve();

  constructor(private readonly deps: AgentPoolDriverDeps) {}

  /** The mode a rollout may run in now; throws the refusal (CONFLICT, reason AGENT_MODE_MISMATCH) when none. */
  mode(): AgentMode {
    const mode = resolveAgentMode(this.deps.configuredMode, this.deps.controller.state(), this.deps.agentNamespace);
    if (mode instanceof AppError) throw mode;
    return mode;
  }

  /** The kind's say in a rollback (agentPoolRollbackRules), asked of this driver's mode and preflight. */
  readonly rollbackRules: RollbackRules = (original, targets) =>
    agentPoolRollbackRules({
      checkRollout: async () => (this.mode() === 'coexist' ? 'COEXIST' : 'DIRECT'),
      preflight: (image, refs) => this.preflight(image, refs, 'preflight'),
    })(original, targets);

  async haltReason(rollout: Rollout): Promise<string | undefined> {
    let mode: AgentMode;
    try {
      mode = this.mode();
    } catch (error) {
      return `refused (${(error as AppError).details.reason}): ${(error as Error).message}`;
    }
    if (rollout.state === 'PENDING') return (mode === 'coexist' ? await this.imageHalt(rollout) : undefined) ?? this.preflightHalt(rollout);
    if (mode !== 'coexist') {
      // Started beside the controller (its holds are out there), which is gone or no longer deploys agents: direct
      // mode cannot take the rollout over (it would ignore the holds), so it stops here.
      const held = this.deps.pools.list().some((p) => p.metadata?.annotations?.[ANNOTATION_HELD_BY] === rollout.id);
      if (!held) return undefined;
      const state = this.deps.controller.state();
      // The watch's own words: "scaled to 0", "runs with --no-agent", "not found", ….
      const why = state.kind === 'agents' ? state.ref : state.detail;
      return `the vm-dhcp-controller no longer deploys agents (${why}) during a coexistence rollout; its pools stay held`;
    }
    return this.imageHalt(rollout);
  }

  /** Beside the controller: it deploys an image that is neither the rollout's nor on its way to it from rollplane. */
  private async imageHalt(rollout: Rollout): Promise<string | undefined> {
    const state = this.deps.controller.state();
    if (state.kind !== 'agents') return undefined;
    const image = this.rolloutImage(rollout);
    if (image === undefined || state.image === normalizeImage(image)) return undefined;
    // observe says what its targets wait for, unless the image was changed outside rollplane before that write.
    if (await this.notSetHereYet(rollout)) {
      const verdict = await this.changedBeforeOwnWrite(rollout);
      return verdict && 'halt' in verdict ? verdict.halt : undefined;
    }
    const takenOverBy = this.deps.lever.otherRolloutOn(state.image, rollout.id);
    if (takenOverBy) return `the vm-dhcp-controller ${state.ref} now deploys ${state.image}, not ${image}: taken over by rollout ${takenOverBy}`;
    return `the vm-dhcp-controller ${state.ref} now deploys ${state.image}, not ${image}: its --image was changed outside rollplane (a helm upgrade?); stopped so that upstream's recreations are not counted as this rollout's`;
  }

  /**
   * Before rollplane set the rollout's image here: the controller deploys neither it nor the image it deployed when the
   * rollout started, nor one another rollout of rollplane set since (ControllerImageLever.changedOutsideSinceStart).
   * Someone changed it outside rollplane meanwhile (a helm upgrade while rollplane was down, or while its write hung):
   * writing now would revert that change, so the rollout stops without writing (attack 17, H1). `wait`: a change the
   * history has not recorded yet, which nobody can date: neither halt nor write until it is (attack 18, H1).
   */
  private async changedBeforeOwnWrite(rollout: Rollout): Promise<{ halt: string } | { wait: string } | undefined> {
    const state = this.deps.controller.state();
    const image = this.rolloutImage(rollout);
    if (state.kind !== 'agents' || image === undefined || state.image === normalizeImage(image)) return undefined;
    const outside = await this.deps.lever.changedOutsideSinceStart(rollout, state.image);
    if (!outside) return undefined;
    if ('unrecorded' in outside) {
      return { wait: `the vm-dhcp-controller ${state.ref} now deploys ${state.image}, a change rollplane has not recorded yet: waiting for it before writing` };
    }
    return {
      halt: `the vm-dhcp-controller ${state.ref} now deploys ${state.image}, neither ${image} nor ${outside.startImage} (what it deployed when the rollout started): its --image was changed outside rollplane (a helm upgrade?) before rollplane set it; stopped without writing, so that the change is not reverted`,
    };
  }

  /** changedBeforeOwnWrite for prepare: no write while it says halt (the next pass fails the rollout) or wait. */
  private async refuseWriteOverOutsideChange(rollout: Rollout): Promise<void> {
    const verdict = await this.changedBeforeOwnWrite(rollout);
    if (verdict) throw new ConflictError('halt' in verdict ? verdict.halt : verdict.wait);
  }

  /**
   * One prepare at a time, in this process (only the leader runs the engine): rollouts to the same image may run side
   * by side, and a prepare that listed the pools while another rollout was releasing them re-held a pool just released
   * for the same image, which that rollout then waited for until its deadline (issue 34, finding 3).
   */
  async prepare(rollout: Rollout, signal: AbortSignal): Promise<void> {
    const run = this.preparing.then(() => this.prepareAlone(rollout, signal));
    this.preparing = run.catch(() => undefined);
    return run;
  }

  private async prepareAlone(rollout: Rollout, signal: AbortSignal): Promise<void> {
    if (this.mode() !== 'coexist') return;
    const image = this.rolloutImage(rollout);
    if (image === undefined) throw new ConflictError(`rollout ${rollout.id} asks for more than one image; the vm-dhcp-controller deploys one`);
    // A write of an earlier try whose answer was lost: nothing more is written, nor taken off, until it is settled.
    await this.deps.lever.settle(rollout.id, signal);
    await this.deps.holds.settleAll();
    // Already deploying the image (another rollout to it is under way, or ended there): every pool it would move is
    // held already or on its way to the image, released by that rollout. Holding one now would take it back from that
    // rollout, and hold nothing else back.
    const state = this.deps.controller.state();
    if (state.kind === 'agents' && state.image === normalizeImage(image)) {
      // Deploying it is this rollout's too from here on: a later change of it is someone else's (notSetHereYet).
      this.deps.lever.confirm(rollout.id, state.image);
      return this.deps.lever.waitForRollout(image, signal);
    }
    // Never over a change made outside rollplane since the rollout started (the next pass's haltReason fails it).
    await this.refuseWriteOverOutsideChange(rollout);
    // (a) Hold every pool the controller would otherwise move to the new image at once, selected or not: those outside
    // the selection keep their agent, the selected ones wait for their wave.
    const toHold = this.poolsToHold(image);
    // Pools still held by another rollout of rollplane's (aborted or superseded, its holds left on) become this one's:
    // its marker written over theirs moves the pool's resourceVersion, so a release of that rollout still on its way
    // can no longer land, and a retry of it sees another holder (attack 21, F1: it moved a pool beside this rollout's
    // own admission). Not undone below: the pools stay held either way.
    await this.adoptHolds(rollout.id, image, signal);
    // Every hold must be in before the image changes; a few at a time (each is one request). haltReason dry-ran them
    // all (preflight); should one still be refused now, the holds written here come off again before the error goes
    // up: nothing is left half-held, and the next pass's preflight fails the rollout with the refusal.
    const held: IPPool[] = [];
    let next = 0;
    const worker = async () => {
      while (next < toHold.length) {
        signal.throwIfAborted();
        const pool = toHold[next++]!;
        // Changed since the cache showed it (a conflict, or a lost answer settled): held only if it still needs it, and
        // taken over if another rollout's late hold landed meanwhile (attack 22, G3).
        const written = await this.deps.holds.write(pool, holdFor(rollout.id), (current) =>
          this.needsHold(current, image) || this.adoptable(current, rollout.id, image) ? holdFor(rollout.id) : undefined,
        );
        if (typeof written !== 'string') held.push(written);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(HOLD_CONCURRENCY, toHold.length) }, worker));
      // (b) The controller's new image, through its owner: upstream restarts and re-syncs every pool; only unheld ones
      // change. Asked again: the holds take time (or hung), and a helm upgrade may have come meanwhile. The write
      // itself replaces only the image the cache shows (ControllerImageLever.set), the one just asked about.
      await this.refuseWriteOverOutsideChange(rollout);
      signal.throwIfAborted();
      // Superseded or aborted while its holds were on their way (a slow API server): it writes no image any more (attack
      // 22, G3: the superseded rollout set its image, reverted it, and its finish took the newer one's holds off).
      await this.refuseWriteForEndedRollout(rollout);
      await this.deps.lever.set(image, rollout.id, signal);
    } catch (error) {
      // Not while the image write may still land (its answer was lost): the holds are what keeps it from moving every
      // pool at once (attack 18, H2). They come off once it is settled: by the next try, or by finish.
      if (!isUnsettledImageWrite(error)) await this.undoHolds(held, rollout.id);
      throw error;
    }
    // (c) Its own rolling update: until the new pod leads, the old one reconciles with the old --image.
    await this.deps.lever.waitForRollout(image, signal);
  }

  /** Writes `rolloutId`'s marker on the pools another rollout of rollplane's holds that a rollout to `image` would hold. */
  private async adoptHolds(rolloutId: string, image: string, signal: AbortSignal): Promise<void> {
    const pools = this.deps.pools.list().filter((pool) => this.adoptable(pool, rolloutId, image));
    let next = 0;
    const worker = async () => {
      while (next < pools.length) {
        signal.throwIfAborted();
        const pool = pools[next++]!;
        // Refused because the pool changed (the older rollout's release landed first: attack 22, G2): held all the same
        // when it still needs a hold, before this rollout's image write can move it.
        await this.deps.holds.write(pool, holdFor(rolloutId), (current) =>
          this.adoptable(current, rolloutId, image) || this.needsHold(current, image) ? holdFor(rolloutId) : undefined,
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(HOLD_CONCURRENCY, pools.length) }, worker));
  }

  /** Held by another rollout of rollplane's, and a hold a rollout of `rolloutId` to `image` would keep on. */
  private adoptable(pool: IPPool, rolloutId: string, image: string): boolean {
    const holder = rollplaneHolder(pool.metadata?.annotations);
    return holder !== undefined && holder !== rolloutId && !pool.spec?.paused && !pool.metadata?.deletionTimestamp && !this.runsImage(pool, image);
  }

  /** Throws when the rollout is no longer active in the history (superseded, aborted, failed meanwhile). */
  private async refuseWriteForEndedRollout(rollout: Rollout): Promise<void> {
    const state = await this.deps.rolloutState?.(rollout.id);
    if (state !== undefined && !ACTIVE_ROLLOUT_STATES.includes(state)) {
      throw new ConflictError(`rollout ${rollout.id} is ${state}: it writes the vm-dhcp-controller's --image no more`);
    }
  }

  /** The pools a rollout to `image` holds: every pool the controller would move at once, selected or not. */
  private poolsToHold(image: string): IPPool[] {
    return this.deps.pools.list().filter((pool) => this.needsHold(pool, image));
  }

  private needsHold(pool: IPPool, image: string): boolean {
    return (
      !pool.spec?.paused && // upstream runs no agent for it
      !pool.metadata?.deletionTimestamp &&
      pool.metadata?.annotations?.[ANNOTATION_HOLD] === undefined && // held already (by us or someone else)
      !this.runsImage(pool, image)
    );
  }

  /**
   * Takes rollplane's holds of `rolloutId` off `pools` (as its hold writes left them) again; best effort: a failed
   * removal is left for finish. A removal whose answer is lost is fenced before the next try holds the pool again
   * (PoolHoldWrites): landing later, it moved that pool beside the rollout's own admission (attack 20, F1).
   */
  private async undoHolds(pools: readonly IPPool[], rolloutId: string): Promise<void> {
    const ours = (pool: IPPool) => rollplaneHolder(pool.metadata?.annotations) === rolloutId;
    for (const pool of pools) {
      if (!ours(pool)) continue;
      await this.deps.holds.write(pool, RELEASE, (current) => (ours(current) ? RELEASE : undefined)).catch(() => undefined);
    }
  }

  /**
   * The image a rollout to `image` deploys, as the agents will run it: beside the controller, as its release parses
   * `--image` (no tag → `:latest` from v1.5.0 on); refused (BAD_USER_INPUT on `input.image`) when that release cannot
   * parse it and would exit. In direct mode rollplane writes the image as given.
   */
  admitImage(image: string): string {
    const state = this.deps.controller.state();
    if (this.mode() !== 'coexist' || state.kind !== 'agents') return image;
    const release = vmDhcpRelease(state.version);
    const parsed = parseAgentImage(image, release.imageParser);
    if (parsed instanceof Error) {
      const rule =
        release.imageParser === 'split'
          ? `${state.version} splits --image on ":" and needs exactly a name and a tag (registry ports are not possible before v1.5.0)`
          : `${state.version ?? 'it'} reads --image as name[:tag] with at most two ":"`;
      throw new ValidationError('input.image', `the vm-dhcp-controller ${state.ref} cannot run ${image}: ${rule}; it would exit with "${parsed.message}"`);
    }
    return parsed;
  }

  /**
   * Dry-runs the first writes of a rollout to `image` (issue 27), so that a refusal comes before anything is written:
   * beside the controller, the hold of every pool it holds and the change of the controller's --image; in direct mode,
   * the creation of one target's agent (its ServiceAccount must exist). Throws the refusal (preflight.ts).
   */
  async preflight(image: string | undefined, targets: readonly { namespace: string; name: string }[], rolloutId: string): Promise<void> {
    if (this.mode() === 'coexist') {
      if (image === undefined) throw new ConflictError(`rollout ${rolloutId} asks for more than one image; the vm-dhcp-controller deploys one`);
      const state = this.deps.controller.state();
      if (state.kind === 'agents' && state.image === normalizeImage(image)) return; // holds nothing, changes nothing
      await dryRunHolds(this.deps.clients, this.poolsToHold(image), rolloutId);
      await this.deps.lever.dryRun(image);
      return;
    }
    const pool = targets.map((t) => this.deps.pools.get(t.namespace, t.name)).find((p) => p && !p.spec?.paused);
    if (pool && image !== undefined) {
      await dryRunAgentCreation(this.deps.clients, pool, image, { namespace: this.deps.agentNamespace, serviceAccountName: this.deps.serviceAccountName });
    }
  }

  /**
   * An automatic rollback (the engine's, cause actor `rollplane`) does not undo a change made outside rollplane: when
   * the controller deploys neither the original's image nor the one the rollback returns to, someone else moved it (a
   * helm upgrade, an add-on upgrade) — which is why the original failed — and rolling back would silently revert them.
   * A rollback asked for by a user goes ahead.
   */
  private overridesOutsideChange(rollout: Rollout): string | undefined {
    if (!rollout.rollbackOfId || rollout.cause.actor !== 'rollplane' || this.mode() !== 'coexist') return undefined;
    const state = this.deps.controller.state();
    if (state.kind !== 'agents' || rollout.fromVersion === null) return undefined;
    const known = [rollout.fromVersion, rollout.toVersion ?? rollout.fromVersion].map(normalizeImage);
    if (known.includes(state.image)) return undefined;
    return `not rolled back automatically: the vm-dhcp-controller ${state.ref} now deploys ${state.image}, set outside rollplane after rollout ${rollout.rollbackOfId} moved it to ${rollout.fromVersion}; a rollback would revert that change. Decide, then bump (or roll back by hand)`;
  }

  /**
   * A PENDING rollout is dry-run before prepare writes anything: a refusal fails it with the API server's message (a
   * rollout launched before the cluster changed). An API server that cannot be reached at all, or that answers with a
   * server error of its own (500, 503, 429: not a webhook's denial, not a webhook it could not call), is retried: a
   * blip of a member's API server must not fail a rollout over every cluster (attack 16, G2).
   */
  private async preflightHalt(rollout: Rollout): Promise<string | undefined> {
    const overridden = this.overridesOutsideChange(rollout);
    if (overridden) return overridden;
    const selection = rollout.selector as PoolSelection;
    const targets = this.deps.pools
      .list()
      .filter((p) =>
        matchesPoolSelection(selection, { namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '', labels: p.metadata?.labels ?? {} }),
      )
      .map((p) => ({ namespace: p.metadata!.namespace!, name: p.metadata!.name! }));
    try {
      // After any prepare under way: it may be moving the controller this very moment (a rollout to the same image).
      await this.preparing;
      await this.preflight(this.rolloutImage(rollout), targets, rollout.id);
      return undefined;
    } catch (error) {
      if (isAppError(error) && error.details.reason === PREFLIGHT_REFUSED && passing(error)) throw error;
      return `refused before anything was written: ${(error as Error).message}`;
    }
  }

  /**
   * After the end: a hold of rollplane's on a pool that already runs the controller's image holds nothing back (e.g.
   * after a rollback, the pools the original never reached), so it goes. Pools behind stay held (drift shows them).
   */
  /** The rollouts whose finish runs here now (the sweep of ended rollouts' holds leaves their holds alone). */
  private readonly finishes = new Map<string, number>();

  finishing(rolloutId: string): boolean {
    return this.finishes.has(rolloutId);
  }

  async finish(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void> {
    this.finishes.set(rollout.id, (this.finishes.get(rollout.id) ?? 0) + 1);
    try {
      await this.finishHere(rollout, signal, others);
    } finally {
      const left = (this.finishes.get(rollout.id) ?? 1) - 1;
      if (left > 0) this.finishes.set(rollout.id, left);
      else this.finishes.delete(rollout.id);
    }
  }

  private async finishHere(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void> {
    if (this.mode() !== 'coexist') return;
    // An image write whose answer was lost: throws (the engine asks again) until it is known whether it landed, and
    // waits for the cache to show it if it did; what follows reads the cache (attack 18, H2).
    await this.deps.lever.settle(rollout.id, signal);
    // A write of this rollout's image another process sent (before a restart, on another replica) may still come:
    // fenced before any hold comes off (attack 20, F5). Only for a rollout that did not succeed: one that did has its
    // image deployed.
    if (rollout.state !== 'SUCCEEDED') await this.deps.lever.fenceUnknownWrites(rollout, signal);
    // A hold or release of this process whose answer was lost: settled before the holds are judged from the cache.
    await this.deps.holds.settleAll();
    await this.revertIfNothingReleased(rollout, signal, others);
    await this.backOutOfFailedImage(rollout, signal, others);
    // The controller may just have been put back (above). Until its new pod leads, the old one reconciles with the old
    // --image, and a pool released now is handled by it: the exposure test saw the failed image's pod write its image
    // into a just-released pool's agentPodRef and delete that pool's good agent.
    await this.deps.lever.waitForCurrentRollout(signal);
    const state = this.deps.controller.state();
    if (state.kind !== 'agents') return;
    // Not a hold of another rollout still active: it holds its pools back from the image it is about to set (attack 22,
    // G3: an aborted rollout's finish took a newer rollout's fresh holds off, and that one's write moved every pool).
    const active = new Set(others.map((other) => other.id));
    const holdsNothingBack = (pool: IPPool) => {
      const holder = rollplaneHolder(pool.metadata?.annotations);
      return holder !== undefined && !active.has(holder) && this.runsImage(pool, state.image);
    };
    for (const pool of this.deps.pools.list()) {
      signal.throwIfAborted();
      if (!holdsNothingBack(pool)) continue;
      await this.deps.holds.write(pool, RELEASE, (current) => (holdsNothingBack(current) ? RELEASE : undefined));
    }
  }

  /**
   * A rollout that ended without success before any pool took its image (aborted right after it started, say) leaves
   * the controller on an image no agent runs: every pool would be held against it, and a rollback has no target to
   * undo. Put the controller's --image back to what the pools run; the holds then come off (finish), as if the rollout
   * had not begun.
   */
  private async revertIfNothingReleased(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void> {
    if (rollout.state === 'SUCCEEDED' || !rollout.fromVersion) return;
    const image = this.rolloutImage(rollout);
    const state = this.deps.controller.state();
    if (image === undefined || state.kind !== 'agents' || state.image !== normalizeImage(image)) return;
    // Another rollout to the same image still needs the controller on it (finding 3: rollouts to one image cooperate).
    if (others.some((other) => other.toVersion !== null && normalizeImage(other.toVersion) === state.image)) return;
    // A pool upstream has moved to the image (its ref names it), even with the new agent not up yet, was released.
    if (this.deps.pools.list().some((pool) => normalizeImage(pool.status?.agentPodRef?.image ?? '') === normalizeImage(image))) return;
    await this.deps.lever.set(rollout.fromVersion, rollout.id, signal);
  }

  /**
   * A FAILED rollout must not leave the controller on its image (issue 27): upstream recreates any missing agent with
   * the controller's --image, held or not, so every pool would be one eviction away from the failed image. The safe
   * sequence: (1) hold again every pool that took the failed image (released pools: their agent, or the one being made,
   * runs it), so that (2) putting --image back to the rollout's previous image moves none of them — they stay for a
   * rollback (the automatic one, on by default, or a user's) to release in waves; the pools that never moved are on
   * the controller's image again, and their holds come off (finish). Between (1) and (2) the untouched pools are still
   * exposed to the failed image, as they were during the rollout: the window is these few requests. Skipped when the
   * controller no longer deploys the failed image (changed outside rollplane, or already put back by the rollback's
   * prepare) or another active rollout still needs it.
   */
  private async backOutOfFailedImage(rollout: Rollout, signal: AbortSignal, others: readonly Rollout[]): Promise<void> {
    // A failed rollback stays where it is: the image before it is the one its original failed on (attack 20, F2: a
    // failed rollback put the controller back on the failed image, every pool held against the good one).
    if (rollout.state !== 'FAILED' || rollout.rollbackOfId) return;
    // Started from several images: back to the one the controller deployed when it started (attack 22, G1: no back-out
    // at all, the controller left on the failed image and the untouched pools held against the good one).
    const back = rollout.fromVersion ?? (await this.deps.lever.startImageOf(rollout));
    if (!back) return;
    const image = this.rolloutImage(rollout);
    if (image === undefined) return;
    const failed = normalizeImage(image);
    const onFailedImage = () => {
      const state = this.deps.controller.state();
      return state.kind === 'agents' && state.image === failed;
    };
    if (!onFailedImage()) return;
    if (others.some((other) => other.toVersion !== null && normalizeImage(other.toVersion) === failed)) return;
    const tookFailedImage = (pool: IPPool) => {
      if (pool.metadata?.annotations?.[ANNOTATION_HOLD] !== undefined || pool.spec?.paused) return false;
      const ref = pool.status?.agentPodRef;
      const agent = ref?.name ? this.deps.pods.get(ref.namespace ?? this.deps.agentNamespace, ref.name) : undefined;
      return normalizeImage(ref?.image ?? '') === failed || normalizeImage((agent && podImage(agent)) || '') === failed;
    };
    for (const pool of this.deps.pools.list()) {
      signal.throwIfAborted();
      if (!tookFailedImage(pool)) continue;
      // Only while the controller still deploys the failed image: a rollback that already put it back releases these
      // pools itself, and a hold written now would take one back from it.
      if (!onFailedImage()) return;
      await this.deps.holds.write(pool, holdFor(rollout.id), (current) => (onFailedImage() && tookFailedImage(current) ? holdFor(rollout.id) : undefined));
    }
    if (onFailedImage()) await this.deps.lever.set(back, rollout.id, signal);
  }

  async admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void> {
    if (this.mode() === 'coexist') return this.release(target, rollout);
    const retries = this.deps.maxConflictRetries ?? 5;
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      const pool = attempt === 0 ? this.deps.pools.get(target.namespace, target.name) : await this.readPool(target);
      if (!pool) throw new NotFoundError(`ippool ${target.namespace}/${target.name} not found`);
      if (pool.metadata?.annotations?.[ANNOTATION_HOLD] !== undefined) return; // observe reports it as failed
      if (pool.status?.agentPodRef?.image === target.toVersion) return;
      // Durable before the write: the recreation it starts is this rollout's, also when recorded after a restart.
      await this.intend(target, rollout, undefined);
      const body: IPPool = { ...pool, status: { ...pool.status, agentPodRef: { ...pool.status?.agentPodRef, image: target.toVersion } } };
      try {
        await kubeCall(`admit ippool ${target.namespace}/${target.name}`, () =>
          this.deps.clients.custom.replaceNamespacedCustomObjectStatus({
            group: IPPOOL_GROUP,
            version: IPPOOL_VERSION,
            plural: IPPOOL_PLURAL,
            namespace: target.namespace,
            name: target.name,
            body,
          }),
        );
        return;
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= retries) throw error;
      }
    }
  }

  /** Coexistence admission: take rollplane's hold off the pool; a hold someone else put there stays (observe fails it). */
  private async release(target: AdmittedTarget, rollout: Rollout): Promise<void> {
    const state = this.deps.controller.state();
    if (state.kind !== 'agents' || state.image !== normalizeImage(target.toVersion)) {
      // haltReason fails the rollout on its next pass; releasing now would let upstream deploy the wrong image.
      throw new ConflictError(`not releasing ${target.namespace}/${target.name}: the vm-dhcp-controller does not deploy ${target.toVersion}`);
    }
    const pool = this.deps.pools.get(target.namespace, target.name) ?? (await this.readPool(target));
    if (!pool) throw new NotFoundError(`ippool ${target.namespace}/${target.name} not found`);
    const release = releaseOf(pool);
    if (release === undefined) return;
    // Decided again after a conflict (or a lost answer) only while the pool has the holder it had: one another rollout
    // took over meanwhile (attack 21, F1: a superseded rollout's release, refused, was sent again) is not released.
    const holder = pool.metadata?.annotations?.[ANNOTATION_HELD_BY];
    const again = (current: IPPool) => (current.metadata?.annotations?.[ANNOTATION_HELD_BY] === holder ? releaseOf(current) : undefined);
    // An operator's hold now covers the pool: it stays, rollplane's marker goes, and observe fails the target.
    if (holdOf(pool.metadata?.annotations) === 'other') {
      await this.deps.holds.write(pool, release, again);
      return;
    }
    // Durable before the act: the replacement upstream is about to make is this rollout's, and is recorded once even
    // if rollplane restarts before it sees the old agent go (the reconciler completes the record).
    const ref = pool.status?.agentPodRef;
    const agent = ref?.name ? this.deps.pods.get(ref.namespace ?? this.deps.agentNamespace, ref.name) : undefined;
    const moves = !this.runsImage(pool, target.toVersion);
    if (moves) await this.intend(target, rollout, agent);
    // Conditional on the pool as read: a hold of this rollout's whose answer was lost can no longer land after this
    // (attack 20, F2: it stranded the pool, and the rollout failed at its deadline). Sent again (its answer was lost,
    // or the pool changed), the recreation is dated from the write that lands (attack 21, F3: 67 s for 2 s).
    await this.deps.holds.write(pool, release, again, moves ? () => this.redate(target) : undefined);
  }

  /** The release time of the target's intent, now: nothing moved yet (the pool is still held). */
  private async redate(target: AdmittedTarget): Promise<void> {
    const current = this.deps.recreations.get(target.namespace, target.name);
    if (current?.deletedAt === undefined) return;
    await this.deps.recreations.intend(target.namespace, target.name, { ...current, deletedAt: new Date().toISOString() });
  }

  /**
   * Notes that the pool's next recreation is `rollout`'s, for `target.toVersion`. A recreation already under way (an
   * agent gone missing, say) keeps what it knows of the old agent and becomes the rollout's. `agent`: the agent about
   * to be replaced beside the vm-dhcp-controller (its release time stands for the deletion).
   */
  private async intend(target: AdmittedTarget, rollout: Rollout, agent: V1Pod | undefined): Promise<void> {
    const current = this.deps.recreations.get(target.namespace, target.name);
    if (current?.rolloutId === rollout.id && current.plannedImage === target.toVersion) return;
    // Under way only while the agent it replaces is not the one still running: an intent whose release never moved the
    // pool (undone, fenced, or held again before upstream acted) keeps nothing, or its old release time would date this
    // recreation (attack 21, F3: 85 s recorded for a replacement of 0.3 s, beside two others "down" with it).
    const live = agent?.metadata?.uid !== undefined && !agent.metadata.deletionTimestamp ? agent.metadata.uid : undefined;
    const underWay = current?.deletedAt !== undefined && (live === undefined || current.oldUid !== live);
    const old = underWay
      ? { oldUid: current!.oldUid, oldImage: current!.oldImage, deletedAt: current!.deletedAt }
      : agent?.metadata?.uid
        ? { oldUid: agent.metadata.uid, oldImage: podImage(agent) ?? null, deletedAt: new Date().toISOString() }
        : { oldUid: null, oldImage: null };
    await this.deps.recreations.intend(target.namespace, target.name, { reason: 'rollout', ...old, rolloutId: rollout.id, plannedImage: target.toVersion });
  }

  private async readPool(target: AdmittedTarget): Promise<IPPool | undefined> {
    try {
      return (await kubeCall(`read ippool ${target.namespace}/${target.name}`, () =>
        this.deps.clients.custom.getNamespacedCustomObject({
          group: IPPOOL_GROUP,
          version: IPPOOL_VERSION,
          plural: IPPOOL_PLURAL,
          namespace: target.namespace,
          name: target.name,
        }),
      )) as IPPool;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * The controller has not deployed the rollout's image since the rollout started (ControllerImageLever.deployedFor:
   * this process's memory, then the cluster's recorded changes): the rollout's own change is not made here yet, so
   * whatever the controller deploys was not changed outside rollplane. A member's writes are made by its target
   * executor, which may lag the rollout's admissions (the member was unreachable, its write failed and is retried, or
   * the engine does not wait for it) or run on another replica; and a member may start from another image than the
   * rollout's `fromVersion` (another cluster's). Attack 15, F2 and attack 16, N1: healthy rollouts failed as "changed
   * outside rollplane" or "taken over" while their own write was on its way. Its targets wait, and fail at their
   * progress deadline if the change never comes. Once the image was deployed, any other image is someone else's (a
   * helm upgrade or rollback), on every replica and after a restart alike.
   */
  private async notSetHereYet(rollout: Pick<Rollout, 'id' | 'toVersion' | 'createdAt'>): Promise<boolean> {
    return !(await this.deps.lever.deployedFor(rollout));
  }

  async observe(target: AdmittedTarget, rollout: Rollout): Promise<TargetObservation> {
    const pool = this.deps.pools.get(target.namespace, target.name);
    if (!pool) return { phase: 'failed', reason: `ippool ${target.namespace}/${target.name} was deleted` };
    const annotations = pool.metadata?.annotations ?? {};
    const heldByOthers = holdOf(annotations) === 'other';
    if (heldByOthers && !this.runsImage(pool, target.toVersion)) {
      return { phase: 'failed', reason: 'pool is held (network.harvesterhci.io/hold-ippool-agent-upgrade)' };
    }
    if (pool.spec?.paused) return { phase: 'failed', reason: 'pool is paused (spec.paused)' };
    const coexist = this.mode() === 'coexist';
    if (coexist) {
      const state = this.deps.controller.state();
      if (state.kind === 'agents' && state.image !== normalizeImage(target.toVersion)) {
        if (await this.notSetHereYet(rollout)) {
          // Ended before its image was written here (superseded or aborted while a member's prepare was on its way):
          // its prepare no longer writes the image, so this pool, still on another, will not change for it (G4).
          if (!ACTIVE_ROLLOUT_STATES.includes(rollout.state) && !this.runsImage(pool, target.toVersion)) {
            return {
              phase: 'untouched',
              reason: `rollout ${rollout.id} ended (${rollout.state}) before rollplane set the vm-dhcp-controller's --image to ${target.toVersion} here: the pool did not change`,
            };
          }
          const verdict = await this.changedBeforeOwnWrite(rollout);
          if (verdict && 'halt' in verdict) return { phase: 'failed', reason: verdict.halt };
          return {
            phase: 'progressing',
            message: `waiting for rollplane to set the vm-dhcp-controller's --image to ${target.toVersion} here (it deploys ${state.image})`,
          };
        }
        const takenOverBy = this.deps.lever.otherRolloutOn(state.image, target.rolloutId);
        const why = takenOverBy ? `taken over by rollout ${takenOverBy}` : 'its --image was changed outside rollplane';
        return { phase: 'failed', reason: `the vm-dhcp-controller now deploys ${state.image}, not ${target.toVersion} (${why})` };
      }
      if (holdOf(annotations) === 'rollplane') return { phase: 'progressing', message: 'releasing the hold' };
    }
    const ref = pool.status?.agentPodRef;
    if (ref?.image !== target.toVersion)
      return { phase: 'progressing', message: coexist ? 'waiting for the vm-dhcp-controller to record the image' : 'waiting for admission to be recorded' };
    const pod = this.deps.pods.get(ref.namespace ?? this.deps.agentNamespace, ref.name ?? agentName(target.namespace, target.name));
    if (!pod || podImage(pod) !== target.toVersion) return { phase: 'progressing', message: 'agent being recreated' };
    const failure = pullFailure(pod);
    if (failure) return { phase: 'failed', reason: failure };
    if (pod.metadata?.uid !== ref.uid) return { phase: 'progressing', message: 'new agent not recorded yet' };
    if (!isPodReady(pod)) return { phase: 'progressing', message: 'new agent not ready' };
    // The recreation is complete only once its AgentRecreated event is recorded (with the removal of its record). Only
    // this rollout's: another's intent for a pool already on this image (its release undone before upstream moved the
    // pool) names a recreation that will not come, and a rollback waited for it until its deadline (attack 20, F2).
    if (this.deps.recreations.get(target.namespace, target.name)?.rolloutId === target.rolloutId) {
      return { phase: 'progressing', message: 'recording the recreation' };
    }
    return { phase: 'succeeded' };
  }

  /** The pool's recorded image and running agent are both `image`. */
  private runsImage(pool: IPPool, image: string): boolean {
    return poolRunsImage(pool, image, this.deps.pods, this.deps.agentNamespace);
  }

  /** The one image a coexistence rollout asks the controller for (a rollback's targets may differ: undefined then). */
  private rolloutImage(rollout: Rollout): string | undefined {
    // A rollback's toVersion is its original's fromVersion, or null when the original started from mixed images.
    return rollout.toVersion ?? undefined;
  }

  async unavailableOutsideRollout(rollout: Rollout, inRollout: ReadonlySet<string>): Promise<number> {
    // A rollback selects exactly its targets (its selector is `{ rollbackOf }`, which matches every pool): a pool left
    // broken by another rollout outside it must not hold it back (seen with two failed bumps: the rollback waited forever).
    if (rollout.rollbackOfId) return 0;
    const selection = rollout.selector as PoolSelection;
    let count = 0;
    for (const pool of this.deps.pools.list()) {
      const ns = pool.metadata?.namespace ?? '';
      const name = pool.metadata?.name ?? '';
      if (inRollout.has(poolKey(ns, name))) continue;
      if (!matchesPoolSelection(selection, { namespace: ns, name, labels: pool.metadata?.labels ?? {} })) continue;
      if (pool.spec?.paused) continue;
      if (!this.agentReady(pool)) count++;
    }
    return count;
  }

  private agentReady(pool: IPPool): boolean {
    const ref = pool.status?.agentPodRef;
    const pod = ref?.name ? this.deps.pods.get(ref.namespace ?? this.deps.agentNamespace, ref.name) : undefined;
    return pod !== undefined && isPodReady(pod);
  }
}

/** What an admission beside the controller writes onto a pool: its marker (and hold, when rollplane's) come off. */
function releaseOf(pool: IPPool): HoldAnnotations | undefined {
  const annotations = pool.metadata?.annotations ?? {};
  if (annotations[ANNOTATION_HELD_BY] === undefined) return undefined;
  return holdOf(annotations) === 'other' ? { [ANNOTATION_HELD_BY]: null } : RELEASE;
}
