import { createHash } from 'node:crypto';
import { readPayload } from '../../../domain/eventPayloads.js';
import type { Reconciler } from '../../../controller/Controller.js';
import { EventType } from '../../../domain/events.js';
import type { ControllerHost } from '../../../controllers/host.js';
import type { KindEvents } from '../../../controllers/kindHost.js';
import type { ControllerImageLever, OwnImageChange } from './ControllerImageLever.js';
import { type ControllerOwner, describeOwner, findOwner, readAddon } from './controllerOwner.js';
import { markedRollout } from './imageWriteMarker.js';
import type { VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';

export interface ControllerImageReconcilerDeps {
  watch: VmDhcpControllerWatch;
  lever: Pick<ControllerImageLever, 'takeOwnChange'>;
  host: Pick<ControllerHost, 'logger' | 'clients'>;
  /** The kind's history: the changes are recorded there and the last one read back. */
  history: Pick<KindEvents, 'append' | 'listBefore'>;
}

/**
 * Records each change of the vm-dhcp-controller's `--image` once (an UpstreamControllerChanged event). Runs on the
 * leader only, like every controller, so replicas do not record one change twice.
 * - A change rollplane made is `planned: true`, with the rollout that made it (its `rolloutId`) and where it was
 *   written (`changedThrough`: the Addon's values or the Deployment): as this process remembers it, or as the write's
 *   marker on the object says (another replica made it, or this one before a restart).
 * - Any other change is `planned: false`. When the image it replaced was set by a rollout of rollplane, it reverted
 *   that rollout's choice outside rollplane (a helm upgrade, an add-on upgrade, kubectl): the event carries that
 *   rollout's id (so the rollout's own events show it) and `reverts: <rollout id>`.
 * Exactly once across restarts of rollplane: the image the history last recorded is the baseline, so a change made
 * while rollplane was down is recorded when it starts. With no history, the first image seen is the baseline, recorded
 * as `firstSeen` (no old image): what the controller deployed when a rollout started is then always in the history,
 * which tells a change made outside rollplane before the rollout's own change landed (ControllerImageLever).
 */
export class ControllerImageReconciler implements Reconciler {
  private lastImage: string | undefined;
  /** When this reconciler started: a change its first look finds happened before that look, at an unknown time. */
  private readonly startedAt = new Date();
  /** The API server this reconciler watches through (endpointOf): recorded with each change. */
  private readonly endpoint: string | undefined;

  constructor(private readonly deps: ControllerImageReconcilerDeps) {
    this.endpoint = endpointOf(deps.host.clients.kubeConfig.getCurrentCluster()?.server);
  }

  async reconcile(): Promise<void> {
    const state = this.deps.watch.state();
    if (state.kind !== 'agents') return;
    const slash = state.ref.indexOf('/');
    const where = { namespace: state.ref.slice(0, slash), name: state.ref.slice(slash + 1) };
    const previous = this.lastImage ?? (await this.recordedImage(where));
    if (previous === undefined) {
      await this.deps.history.append({
        type: EventType.UpstreamControllerChanged,
        ...where,
        payload: { controller: state.ref, oldImage: null, newImage: state.image, planned: false, firstSeen: true, ...this.endpointField() },
      });
      this.lastImage = state.image;
      return;
    }
    const firstLook = this.lastImage === undefined;
    this.lastImage = state.image;
    if (previous === state.image) return;
    const caughtUp = firstLook ? { detectedAtStartOf: this.startedAt.toISOString() } : {};
    // This process's memory of its own write, or the write's marker (another replica's, or before a restart: M2).
    const deployment = this.deps.watch.deployment();
    const owner = deployment ? await findOwner(this.deps.host.clients, deployment).catch(() => undefined) : undefined;
    const own = this.deps.lever.takeOwnChange(state.image) ?? (await this.markedChange(where, state.image, owner));
    if (own) {
      await this.deps.history.append({
        type: EventType.UpstreamControllerChanged,
        ...where,
        rolloutId: own.rolloutId,
        payload: {
          controller: state.ref,
          oldImage: previous,
          newImage: state.image,
          planned: true,
          changedThrough: own.through,
          owner: describeOwner(own.owner),
          ...this.endpointField(),
        },
      });
      return;
    }
    const setBy = await this.rolloutThatSet(where, previous);
    await this.deps.history.append({
      type: EventType.UpstreamControllerChanged,
      ...where,
      ...(setBy ? { rolloutId: setBy } : {}),
      payload: {
        controller: state.ref,
        oldImage: previous,
        newImage: state.image,
        planned: false,
        ...caughtUp,
        ...(setBy ? { reverts: setBy } : {}),
        ...(owner ? { owner: describeOwner(owner) } : {}),
        ...this.endpointField(),
      },
    });
    this.deps.host.logger.warn(
      { controller: state.ref, oldImage: previous, newImage: state.image, ...(setBy ? { reverts: setBy } : {}) },
      setBy
        ? `the vm-dhcp-controller --image set by rollout ${setBy} was changed outside rollplane`
        : 'the vm-dhcp-controller --image was changed outside rollplane',
    );
  }

  /**
   * rollplane's change to `image` as its write marked it on the object it wrote (imageWriteMarker.ts), while nothing
   * changed that object's spec since: the Addon that renders the controller, or its Deployment.
   */
  private async markedChange(
    where: { namespace: string; name: string },
    image: string,
    owner: ControllerOwner | undefined,
  ): Promise<OwnImageChange | undefined> {
    const deployment = this.deps.watch.deployment();
    if (!owner || !deployment) return undefined;
    const through = owner.kind === 'addon' ? 'addon' : 'deployment';
    const marked =
      owner.kind === 'addon'
        ? await readAddon(this.deps.host.clients, owner.namespace, owner.name).then(
            (addon) => markedRollout(addon, image),
            () => undefined,
          )
        : markedRollout(deployment, image);
    if (!marked) return undefined;
    // A write lands once: recorded already, this change to the same image is someone else's (helm put it back).
    const recorded = await this.deps.history.listBefore({ ...where, types: [EventType.UpstreamControllerChanged] }, undefined, 50);
    const seen = recorded.some((change) => {
      const payload = readPayload(EventType.UpstreamControllerChanged, change.payload);
      return change.rolloutId === marked && payload.planned && payload.newImage === image;
    });
    return seen ? undefined : { rolloutId: marked, through, owner };
  }

  /**
   * The image the newest recorded change of the controller names (the baseline after a restart); undefined when none,
   * or when it was seen through another API server: the cluster's name was registered again at another cluster, whose
   * controller is not the one recorded (attack 18, M3: its first change read as a revert of the old cluster's image).
   */
  private async recordedImage(where: { namespace: string; name: string }): Promise<string | undefined> {
    const [newest] = await this.deps.history.listBefore({ ...where, types: [EventType.UpstreamControllerChanged] }, undefined, 1);
    if (!newest) return undefined;
    const payload = readPayload(EventType.UpstreamControllerChanged, newest.payload);
    if (payload.endpoint !== undefined && this.endpoint !== undefined && payload.endpoint !== this.endpoint) return undefined;
    return payload.newImage;
  }

  private endpointField(): { endpoint?: string } {
    return this.endpoint === undefined ? {} : { endpoint: this.endpoint };
  }

  /** The rollout whose planned change put `image` on the controller, when the newest change to it was rollplane's. */
  private async rolloutThatSet(where: { namespace: string; name: string }, image: string): Promise<string | undefined> {
    const changes = await this.deps.history.listBefore({ ...where, types: [EventType.UpstreamControllerChanged] }, undefined, 20);
    const setIt = changes
      .map((change) => ({ rolloutId: change.rolloutId, ...readPayload(EventType.UpstreamControllerChanged, change.payload) }))
      .find((change) => change.newImage === image);
    return setIt?.planned === true && setIt.rolloutId ? setIt.rolloutId : undefined;
  }
}

/** A short hash of an API server's URL: tells two clusters apart in the history without recording where they are. */
function endpointOf(server: string | undefined): string | undefined {
  return server ? createHash('sha256').update(server).digest('hex').slice(0, 16) : undefined;
}
