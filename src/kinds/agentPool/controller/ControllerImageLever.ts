import { readPayload } from '../../../domain/eventPayloads.js';
import { EventType } from '../../../domain/events.js';
import type { KindEvents } from '../../../controllers/kindHost.js';
import { ConflictError, UnavailableError } from '../../../errors.js';
import type { KubeClients } from '../../../kube/index.js';
import type { V1Deployment } from '@kubernetes/client-node';
import { type Addon, type ControllerOwner, describeOwner, findOwner, setAddonAgentImage } from './controllerOwner.js';
import { markerOps } from './imageWriteMarker.js';
import { ImageWriteFence, type ImageWriteTarget, UnsettledImageWriteError } from './ImageWriteFence.js';
import { refusal } from '../../../controllers/dryRunRefusal.js';
import { normalizeImage, type VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';

/** Rollouts whose confirmed image is remembered (a few bytes each; far more than run at once). */
const CONFIRMED_KEPT = 1_000;

/** How often one rollout asks the history again while the controller is not on its image (each pass would ask). */
const HISTORY_RECHECK_MS = 2_000;

/** The controller's recorded changes read back to find the rollout's image among them (far more than in one rollout). */
const CHANGES_READ = 50;

/** The rollout as the lever asks the history about it. */
type RolloutRef = { id: string; toVersion: string | null; createdAt: Date };

/** What a cluster's recorded changes of the controller's image say of one rollout (ControllerImageLever.historyOf). */
interface HistoryFacts {
  /** The rollout's image was deployed since it started (or already when it started). */
  deployed: boolean;
  /** The image the controller deployed when the rollout started; undefined when nothing was recorded before. */
  startImage: string | undefined;
  /** The images rollouts of rollplane set since the rollout started (planned changes). */
  setByRollplane: Set<string>;
  /**
   * Images of outside changes recorded after the rollout started, but found at the first look of a reconciler that
   * started before it: they may predate the rollout (rollplane restarted, a bump came before its first look; attack
   * 18, H1), so each may be what the controller deployed when the rollout started.
   */
  maybeAtStart: Set<string>;
  /** The image the newest recorded change names (what the history says the controller deploys now). */
  latestImage: string | undefined;
}

/** A change of the controller's image that rollplane made (to tell it from a helm upgrade when it shows). */
export interface OwnImageChange {
  rolloutId: string;
  /** Where the change was written: the Addon's valuesContent, or the Deployment's args. */
  through: 'addon' | 'deployment';
  owner: ControllerOwner;
}

export interface ControllerImageLeverDeps {
  clients: KubeClients;
  controller: VmDhcpControllerWatch;
  /** How long a change waits for the informer cache to show it; default 30 s (the add-on reconcile renders it first). */
  cacheWaitMs?: number;
  /** How long prepare waits for the controller's own rolling update to end; default 10 min. */
  rolloutWaitMs?: number;
  warn?: (message: string, fields: Record<string, unknown>) => void;
  /**
   * This cluster's history (its UpstreamControllerChanged events, written by ControllerImageReconciler): whether the
   * controller deployed a rollout's image since it started, for a process that did not see it itself (another replica
   * made the change, or this one restarted). Without it only this process's memory answers.
   */
  history?: Pick<KindEvents, 'listBefore'>;
  now?: () => number;
}

/**
 * The one way rollplane changes the vm-dhcp-controller's `--image` (ADR 0032): through its owner. An Addon-owned
 * controller gets the image in the Addon's `valuesContent` (agent.image.repository/tag), so the add-on reconcile keeps
 * rollplane's choice instead of reverting it; a Helm release without an Addon, or no owner, gets the Deployment's
 * argument patched (the next `helm upgrade` of such a release puts its own values back: logged, and recorded with the
 * change). Remembers its own changes, so that a change seen later is told apart from one made outside rollplane.
 */
export class ControllerImageLever {
  private readonly own = new Map<string, OwnImageChange>();
  /** The last image rollplane set, and for which rollout (in memory: after a restart only the history knows). */
  private last: { image: string; rolloutId: string } | undefined;
  /** The image each rollout's `set` saw the cache show, by rollout id (in memory; the newest CONFIRMED_KEPT). */
  private readonly confirmed = new Map<string, string>();
  /** What the history said of each rollout, and when it was read (HISTORY_RECHECK_MS apart; the newest CONFIRMED_KEPT). */
  private readonly facts = new Map<string, { at: number; facts: HistoryFacts }>();

  /** Settles image writes whose answer was lost (attack 18, H2). */
  private readonly fence: ImageWriteFence;

  constructor(private readonly deps: ControllerImageLeverDeps) {
    this.fence = new ImageWriteFence(deps.clients);
  }

  /**
   * Sets the controller's image through its owner, and waits until the informer cache shows it. The write lands only
   * on the version of the owner it read; one whose answer was lost is settled first (ImageWriteFence): until it is, this
   * throws (UnsettledImageWriteError) and the caller keeps its holds.
   */
  async set(image: string, rolloutId: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    await this.settle(rolloutId, signal);
    const normalized = normalizeImage(image);
    const deployment = this.deps.controller.deployment();
    if (!deployment) throw new ConflictError('the vm-dhcp-controller Deployment is gone');
    const owner = await findOwner(this.deps.clients, deployment);
    // A rollout that ended meanwhile writes nothing more (seen: a failed rollout's retried prepare set its image 200 ms
    // after the rollout was FAILED, once the member took writes again).
    signal.throwIfAborted();
    const target = writeTargetOf(owner, deployment);
    const fresh = await this.fence.read(target);
    if (!fresh)
      throw new ConflictError(`the ${target.kind === 'addon' ? 'Addon' : 'vm-dhcp-controller Deployment'} ${target.namespace}/${target.name} is gone`);
    signal.throwIfAborted();
    this.own.set(normalized, { rolloutId, through: target.kind, owner });
    this.last = { image: normalized, rolloutId };
    if (owner.kind === 'helm') {
      this.deps.warn?.(
        `the vm-dhcp-controller belongs to ${describeOwner(owner)}: rollplane patches its Deployment, and the next helm upgrade puts the release's agent.image values back; set them to ${image}`,
        { rolloutId, image },
      );
    }
    // The write names the rollout on the object, for a process that does not remember making it (imageWriteMarker.ts).
    const also = markerOps(fresh.object, rolloutId, normalized);
    await this.fence.write(rolloutId, target, fresh, image, () =>
      owner.kind === 'addon'
        ? setAddonAgentImage(this.deps.clients, owner, image, { fresh: fresh.object as Addon, also })
        : this.deps.controller.setImage(this.deps.clients, image, { fresh: fresh.object as V1Deployment, also }),
    );
    // On the Deployment itself, a later generation in the cache is past this write too: another rollout may set its
    // image right after this one (an aborted rollout's revert, then the next one's bump), and the cache, polled, need
    // never show this image; waiting for it stalled that finish for the whole wait (attack 20 F2's test).
    const written = target.kind === 'deployment' ? (fresh.object.metadata?.generation ?? undefined) : undefined;
    await this.untilCacheShows(normalized, signal, written);
    this.confirm(rolloutId, normalized);
  }

  /**
   * Settles the rollout's write whose answer was lost, if any (ImageWriteFence): throws while whether it landed is not
   * known; when it landed, returns once the cache shows its image (what follows reads the cache: a finish that saw the
   * old image would release pools the landed write then moves).
   */
  async settle(rolloutId: string, signal: AbortSignal): Promise<void> {
    const write = this.fence.pending(rolloutId);
    const outcome = await this.fence.settle(rolloutId);
    if (write === undefined || outcome === undefined || outcome === 'not landed') return;
    if (outcome === 'unknown') throw new UnsettledImageWriteError(write.target, write.image);
    await this.untilCacheShows(write.image, signal);
    this.confirm(rolloutId, write.image);
  }

  /**
   * Fences off any write of the rollout's image this process does not know of: one a process before a restart (or
   * another replica) sent, whose answer it never got, may still be on its way (attack 20, F5: SIGKILLed with the write
   * held in a proxy; the restarted process took every hold off, the write landed 40 s later and all six pools moved
   * for an ABORTED rollout). The owner's object read now and annotated on that version: a write made on any earlier one
   * can no longer land. Nothing is written when the controller already deploys the image (the write landed: the
   * caller reverts it) or when its owner cannot be found.
   */
  async fenceUnknownWrites(rollout: { id: string; toVersion: string | null }, signal: AbortSignal): Promise<void> {
    const state = this.deps.controller.state();
    const deployment = this.deps.controller.deployment();
    if (rollout.toVersion === null || state.kind !== 'agents' || !deployment) return;
    const image = normalizeImage(rollout.toVersion);
    if (state.image === image) return;
    const owner = await findOwner(this.deps.clients, deployment);
    const target = writeTargetOf(owner, deployment);
    signal.throwIfAborted();
    const outcome = await this.fence.fenceNow(rollout.id, target, image);
    if (outcome === 'unknown') throw new UnsettledImageWriteError(target, image);
    // Landed: what follows reads the cache (the revert of a rollout that released nothing puts it back).
    if (outcome === 'landed') await this.untilCacheShows(image, signal);
  }

  /**
   * Waits until the informer cache shows the controller deploying `image` (the add-on reconcile renders it first), or,
   * given the Deployment's generation the write was made on, a later generation than the write's own.
   */
  private async untilCacheShows(image: string, signal: AbortSignal, writtenOnGeneration?: number): Promise<void> {
    const deadline = Date.now() + (this.deps.cacheWaitMs ?? 30_000);
    for (;;) {
      const state = this.deps.controller.state();
      if (state.kind === 'agents' && state.image === image) return;
      const generation = this.deps.controller.deployment()?.metadata?.generation;
      if (writtenOnGeneration !== undefined && generation !== undefined && generation > writtenOnGeneration + 1) return;
      if (Date.now() > deadline) throw new ConflictError(`the vm-dhcp-controller Deployment has not shown its --image ${image} yet`);
      signal.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * Whether the controller has deployed the rollout's image since the rollout started: seen by this process (`set`, or
   * found there by prepare), or recorded in the cluster's history by whichever replica watched it — a change to the
   * image after the rollout started, or the image the history last recorded before it started. Once true, any other
   * image the controller deploys was put there by someone else; until then the rollout's own change is on its way
   * (attack 15 F2, attack 16 N1). Durable: another replica, or this one after a restart, answers the same.
   */
  async deployedFor(rollout: RolloutRef): Promise<boolean> {
    if (rollout.toVersion === null) return false;
    const wanted = normalizeImage(rollout.toVersion);
    if (this.confirmed.get(rollout.id) === wanted) return true;
    const facts = await this.historyOf(rollout);
    if (facts?.deployed) this.confirm(rollout.id, wanted);
    return facts?.deployed === true;
  }

  /**
   * Before the rollout's own change landed: whether `image`, which the controller deploys now, was put there outside
   * rollplane after the rollout started. It was when it is neither the image the controller deployed when the rollout
   * started (the newest change the history recorded before it) nor one a rollout of rollplane set since (recorded, or
   * set by this process and not recorded yet). Writing the rollout's image then would revert someone's helm upgrade
   * (attack 17, H1: a restarted or retried prepare did). Undefined when it was not, or when the history does not say
   * what the controller deployed at the start (no recorded change before it).
   */
  async changedOutsideSinceStart(rollout: RolloutRef, image: string): Promise<{ startImage: string } | { unrecorded: true } | undefined> {
    const current = normalizeImage(image);
    if (rollout.toVersion !== null && current === normalizeImage(rollout.toVersion)) return undefined;
    if (this.own.has(current) || this.last?.image === current) return undefined;
    const facts = await this.historyOf(rollout);
    // Deployed once already: any other image now is an outside change, which deployedFor's callers say as such.
    if (facts === undefined || facts.deployed || facts.startImage === undefined) return undefined;
    // The history has not caught up with what the controller deploys (its reconciler has not looked yet, after a
    // restart or a failover, or is about to record it): when that change happened is not known yet (attack 18, H1).
    if (facts.latestImage !== current) return { unrecorded: true };
    if (facts.startImage === current || facts.setByRollplane.has(current) || facts.maybeAtStart.has(current)) return undefined;
    return { startImage: facts.startImage };
  }

  /**
   * What the cluster's recorded changes say of a rollout: its start image and, since it started, whether its image was
   * deployed and which images rollouts of rollplane set. Read at most every HISTORY_RECHECK_MS per rollout (each pass
   * asks); in between, the last answer.
   */
  private async historyOf(rollout: RolloutRef): Promise<HistoryFacts | undefined> {
    const history = this.deps.history;
    const state = this.deps.controller.state();
    if (!history || state.kind !== 'agents') return undefined;
    const now = (this.deps.now ?? Date.now)();
    const known = this.facts.get(rollout.id);
    if (known && now - known.at < HISTORY_RECHECK_MS) return known.facts;
    const slash = state.ref.indexOf('/');
    const changes = await history.listBefore(
      { namespace: state.ref.slice(0, slash), name: state.ref.slice(slash + 1), types: [EventType.UpstreamControllerChanged] },
      undefined,
      CHANGES_READ,
    );
    const wanted = rollout.toVersion === null ? undefined : normalizeImage(rollout.toVersion);
    const started = rollout.createdAt.getTime();
    const facts: HistoryFacts = {
      deployed: false,
      startImage: undefined,
      setByRollplane: new Set(),
      maybeAtStart: new Set(),
      latestImage: changes[0] ? readPayload(EventType.UpstreamControllerChanged, changes[0].payload).newImage : undefined,
    };
    for (const change of changes) {
      const { oldImage, newImage, planned, detectedAtStartOf } = readPayload(EventType.UpstreamControllerChanged, change.payload);
      if (change.createdAt.getTime() >= started) {
        if (newImage === wanted || oldImage === wanted) facts.deployed = true;
        if (planned && newImage !== undefined) facts.setByRollplane.add(newImage);
        const caughtUpSinceStart = detectedAtStartOf !== undefined && Date.parse(detectedAtStartOf) <= started;
        if (!planned && newImage !== undefined && caughtUpSinceStart) facts.maybeAtStart.add(newImage);
        continue;
      }
      // The newest change before the rollout started says what the controller deployed when it did.
      facts.startImage = newImage;
      if (newImage === wanted) facts.deployed = true;
      break;
    }
    this.facts.delete(rollout.id);
    this.facts.set(rollout.id, { at: now, facts });
    if (this.facts.size > CONFIRMED_KEPT) this.facts.delete(this.facts.keys().next().value!);
    return facts;
  }

  /** The image the controller deployed when the rollout started, as the cluster's recorded changes say; undefined: unknown. */
  async startImageOf(rollout: RolloutRef): Promise<string | undefined> {
    return (await this.historyOf(rollout))?.startImage;
  }

  /** Notes that the controller deploys `image` for the rollout as this process saw it (set here, or already there). */
  confirm(rolloutId: string, image: string): void {
    this.confirmed.delete(rolloutId);
    this.confirmed.set(rolloutId, image);
    if (this.confirmed.size > CONFIRMED_KEPT) this.confirmed.delete(this.confirmed.keys().next().value!);
  }

  /** The same change as a server-side dry run (preflight): throws the refusal. */
  async dryRun(image: string): Promise<void> {
    const deployment = this.deps.controller.deployment();
    if (!deployment) return;
    try {
      const owner = await findOwner(this.deps.clients, deployment);
      if (owner.kind === 'addon') await setAddonAgentImage(this.deps.clients, owner, image, { dryRun: true });
      else await this.deps.controller.setImage(this.deps.clients, image, { dryRun: true });
    } catch (error) {
      const state = this.deps.controller.state();
      throw refusal(error, { controller: state.kind === 'agents' ? state.ref : null });
    }
  }

  /**
   * Waits until the controller's own rolling update to `image` is over (VmDhcpControllerWatch.rolledOut): releasing a
   * pool while the old pod still leads lets that pod, with the old --image, handle it.
   */
  async waitForRollout(image: string, signal: AbortSignal): Promise<void> {
    return this.waitUntilRolledOut(() => image, signal);
  }

  /**
   * waitForRollout of the image the controller deploys, read again each time: the image finish just put back may not
   * be in the cache yet, and another rollout may move it on meanwhile. Waiting for the image read once waited for a
   * rollout that never came (an aborted rollout's finish, attack 20 F2's test: 600 s, its holds left on).
   */
  async waitForCurrentRollout(signal: AbortSignal): Promise<void> {
    return this.waitUntilRolledOut(() => {
      const state = this.deps.controller.state();
      return state.kind === 'agents' ? state.image : undefined;
    }, signal);
  }

  private async waitUntilRolledOut(imageNow: () => string | undefined, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + (this.deps.rolloutWaitMs ?? 600_000);
    for (let image = imageNow(); image !== undefined && this.deps.controller.rolledOut(image) === false; image = imageNow()) {
      if (Date.now() > deadline)
        throw new UnavailableError(`the vm-dhcp-controller's own rollout to --image ${image} has not finished: its old pod may still lead`);
      signal.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** The change rollplane made to `image`, once (the reconciler that records changes takes it); undefined when none. */
  takeOwnChange(image: string): OwnImageChange | undefined {
    const normalized = normalizeImage(image);
    const change = this.own.get(normalized);
    this.own.delete(normalized);
    return change;
  }

  /** The rollout other than `rolloutId` that last set the controller to `image`, if rollplane set it last. */
  otherRolloutOn(image: string, rolloutId: string): string | undefined {
    const last = this.last;
    return last && last.image === normalizeImage(image) && last.rolloutId !== rolloutId ? last.rolloutId : undefined;
  }
}

/** Where the controller's image is written for `owner`: the Addon's values, or the Deployment itself. */
function writeTargetOf(owner: ControllerOwner, deployment: V1Deployment): ImageWriteTarget {
  return owner.kind === 'addon'
    ? { kind: 'addon', namespace: owner.namespace, name: owner.name }
    : { kind: 'deployment', namespace: deployment.metadata!.namespace!, name: deployment.metadata!.name! };
}
