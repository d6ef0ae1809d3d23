import { ConflictError, UnavailableError } from '../../../errors.js';
import type { KubeClients } from '../../../kube/index.js';
import { type ControllerOwner, describeOwner, findOwner, setAddonAgentImage } from './controllerOwner.js';
import { refusal } from '../../../controllers/dryRunRefusal.js';
import { normalizeImage, type VmDhcpControllerWatch } from './VmDhcpControllerWatch.js';

/** Rollouts whose confirmed image is remembered (a few bytes each; far more than run at once). */
const CONFIRMED_KEPT = 1_000;

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

  constructor(private readonly deps: ControllerImageLeverDeps) {}

  /** Sets the controller's image through its owner, and waits until the informer cache shows it. */
  async set(image: string, rolloutId: string, signal: AbortSignal): Promise<void> {
    const normalized = normalizeImage(image);
    const deployment = this.deps.controller.deployment();
    if (!deployment) throw new ConflictError('the vm-dhcp-controller Deployment is gone');
    const owner = await findOwner(this.deps.clients, deployment);
    const through = owner.kind === 'addon' ? 'addon' : 'deployment';
    this.own.set(normalized, { rolloutId, through, owner });
    this.last = { image: normalized, rolloutId };
    if (owner.kind === 'addon') await setAddonAgentImage(this.deps.clients, owner, image);
    else {
      if (owner.kind === 'helm') {
        this.deps.warn?.(
          `the vm-dhcp-controller belongs to ${describeOwner(owner)}: rollplane patches its Deployment, and the next helm upgrade puts the release's agent.image values back; set them to ${image}`,
          { rolloutId, image },
        );
      }
      await this.deps.controller.setImage(this.deps.clients, image);
    }
    const deadline = Date.now() + (this.deps.cacheWaitMs ?? 30_000);
    for (;;) {
      const state = this.deps.controller.state();
      if (state.kind === 'agents' && state.image === normalized) return this.confirm(rolloutId, normalized);
      if (Date.now() > deadline) throw new ConflictError(`the vm-dhcp-controller Deployment has not shown its --image ${image} yet`);
      signal.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * The image this process's `set` put the controller on for the rollout and saw in the cache; undefined when it has
   * not (yet): a member's prepare may lag the rollout's admissions, or fail and be retried, or have run on another
   * replica or before a restart.
   */
  confirmedFor(rolloutId: string): string | undefined {
    return this.confirmed.get(rolloutId);
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
    const deadline = Date.now() + (this.deps.rolloutWaitMs ?? 600_000);
    while (this.deps.controller.rolledOut(image) === false) {
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
