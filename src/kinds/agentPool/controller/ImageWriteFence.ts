import type { V1Deployment } from '@kubernetes/client-node';
import { ConflictError, NotFoundError } from '../../../errors.js';
import { kubeCall, type KubeClients, mergePatchOptions, writeOutcomeUnknown } from '../../../kube/index.js';
import { ADDON_GROUP, ADDON_PLURAL, ADDON_VERSION, type Addon, addonAgentImage } from './controllerOwner.js';
import { settleLostWrite } from './settleLostWrite.js';
import { deploymentImage, normalizeImage } from './VmDhcpControllerWatch.js';

/** Where the controller's image is written: its Deployment, or the Harvester Addon that renders it. */
export interface ImageWriteTarget {
  kind: 'deployment' | 'addon';
  namespace: string;
  name: string;
}

/** The target as just read: the object, the image it names (normalized) and its resourceVersion. */
export interface FreshTarget {
  object: V1Deployment | Addon;
  image: string | undefined;
  resourceVersion: string;
}

/** What became of a write whose answer was lost. */
export type Settlement = 'landed' | 'not landed' | 'unknown';

/** Written onto the target to fence off a write whose answer was lost (its value: the rollout, and when). */
export const ANNOTATION_IMAGE_WRITE_FENCE = 'rollplane.io/image-write-fence';

interface Unsettled {
  target: ImageWriteTarget;
  image: string;
  /** The resourceVersion the write was conditional on. */
  resourceVersion: string;
}

/**
 * A write of the controller's image whose answer was lost (no answer within the request timeout, a reset, or the API
 * server's own 504) may still land: the request can wait in a proxy, and the server can commit after answering 504.
 * Landing after the rollout gave up and took its holds off, it moves every pool at once (attack 18, H2: twelve seconds
 * after an abort, far beyond maxUnavailable). So every image write is conditional on the resourceVersion it read
 * (`read`), and an unanswered one is settled before anything relies on it not having landed: the target read again
 * names the image — it landed; carries another resourceVersion — it never can (its precondition is stale); the same —
 * a fence (an annotation, conditional on that version) is written, after which it never can. Until one of those
 * answers, the caller keeps the pools held. Kept in memory: a restarted process fences instead (ControllerImageLever.
 * fenceUnknownWrites; ADR 0074).
 */
export class ImageWriteFence {
  private readonly unsettled = new Map<string, Unsettled>();

  constructor(private readonly clients: KubeClients) {}

  /** The target as it is now (a GET, not the cache: its resourceVersion becomes the write's precondition). */
  async read(target: ImageWriteTarget): Promise<FreshTarget | undefined> {
    try {
      if (target.kind === 'deployment') {
        const object = await kubeCall(`read Deployment ${target.namespace}/${target.name}`, () =>
          this.clients.apps.readNamespacedDeployment({ namespace: target.namespace, name: target.name }),
        );
        return freshOf(target, object);
      }
      const object = (await kubeCall(`read Addon ${target.namespace}/${target.name}`, () =>
        this.clients.custom.getNamespacedCustomObject({ group: ADDON_GROUP, version: ADDON_VERSION, plural: ADDON_PLURAL, ...target }),
      )) as Addon;
      return freshOf(target, object);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * Runs `write` (conditional on `fresh.resourceVersion`) for `rolloutId`. A lost answer is settled at once: landed —
   * done; not landed — the write's error; not known yet — an UnsettledImageWriteError, and the write stays to be
   * settled (`settle`) before the rollout's next write or its finish.
   */
  async write(rolloutId: string, target: ImageWriteTarget, fresh: FreshTarget, image: string, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (!writeOutcomeUnknown(error)) throw error;
      this.unsettled.set(rolloutId, { target, image: normalizeImage(image), resourceVersion: fresh.resourceVersion });
      const outcome = await this.settle(rolloutId);
      if (outcome === 'not landed') throw error;
      if (outcome === 'unknown') throw new UnsettledImageWriteError(target, image, { cause: error });
    }
  }

  /**
   * Treats a write of `image` to `target` as unsettled from the version read now, and settles it: a fence on that
   * version, unless the image is already there. For a write another process may have sent (fenceUnknownWrites).
   */
  async fenceNow(rolloutId: string, target: ImageWriteTarget, image: string): Promise<Settlement | undefined> {
    const fresh = await this.read(target);
    if (!fresh) return undefined;
    if (!this.unsettled.has(rolloutId)) this.unsettled.set(rolloutId, { target, image: normalizeImage(image), resourceVersion: fresh.resourceVersion });
    return this.settle(rolloutId);
  }

  /** The rollout's unsettled write (its target and the image it asked for); undefined when none. */
  pending(rolloutId: string): { target: ImageWriteTarget; image: string } | undefined {
    return this.unsettled.get(rolloutId);
  }

  /**
   * What became of the rollout's unsettled write: undefined when it has none. `unknown` (the target could not be read
   * or fenced now) keeps it to ask again.
   */
  async settle(rolloutId: string): Promise<Settlement | undefined> {
    const write = this.unsettled.get(rolloutId);
    if (!write) return undefined;
    const now = await settleLostWrite({
      resourceVersion: write.resourceVersion,
      read: () => this.read(write.target),
      versionOf: (fresh) => fresh.resourceVersion,
      landed: (fresh) => fresh.image === write.image,
      fence: (resourceVersion) => this.writeFence(write.target, resourceVersion, `${rolloutId} ${new Date().toISOString()}`),
    });
    if (now === 'unknown') return 'unknown';
    this.unsettled.delete(rolloutId);
    // Gone (and the write with it), of another version without the image, or fenced: it never lands.
    return now?.image === write.image ? 'landed' : 'not landed';
  }

  /** A fence annotation onto `target`, conditional on `resourceVersion`; the target after it. */
  private async writeFence(target: ImageWriteTarget, resourceVersion: string, value: string): Promise<FreshTarget> {
    const body = { metadata: { resourceVersion, annotations: { [ANNOTATION_IMAGE_WRITE_FENCE]: value } } };
    const { namespace, name } = target;
    const object = await kubeCall<V1Deployment | Addon>(`fence the image write to ${target.kind} ${namespace}/${name}`, () =>
      target.kind === 'deployment'
        ? this.clients.apps.patchNamespacedDeployment({ namespace, name, body }, mergePatchOptions())
        : this.clients.custom.patchNamespacedCustomObject(
            { group: ADDON_GROUP, version: ADDON_VERSION, plural: ADDON_PLURAL, namespace, name, body },
            mergePatchOptions(),
          ),
    );
    return freshOf(target, object);
  }
}

/** The target's object as a FreshTarget: the image it names (normalized) and its resourceVersion. */
function freshOf(target: ImageWriteTarget, object: V1Deployment | Addon): FreshTarget {
  const resourceVersion = object.metadata?.resourceVersion ?? '';
  if (target.kind === 'deployment') return { object, image: deploymentImage(object as V1Deployment), resourceVersion };
  const image = addonAgentImage((object as Addon).spec?.valuesContent);
  return { object, image: image === undefined ? undefined : normalizeImage(image), resourceVersion };
}

/** The reason (details.reason) of an error thrown while a write of the controller's image is unsettled: keep the holds. */
export const UNSETTLED_IMAGE_WRITE = 'IMAGE_WRITE_UNSETTLED';

/** A write of the controller's image got no answer, and whether it landed is not known yet: the pools stay held. */
export class UnsettledImageWriteError extends ConflictError {
  constructor(target: ImageWriteTarget, image: string, options: { cause?: unknown } = {}) {
    super(
      `rollplane's write of --image ${image} to the ${target.kind === 'addon' ? 'Addon' : 'Deployment'} ${target.namespace}/${target.name} got no answer, and whether it landed is not known yet: the pools' holds stay until it is`,
      { ...options, details: { reason: UNSETTLED_IMAGE_WRITE } },
    );
  }
}

/** Whether `error` says a write of the controller's image is unsettled (the caller keeps its holds). */
export function isUnsettledImageWrite(error: unknown): boolean {
  return error instanceof ConflictError && error.details.reason === UNSETTLED_IMAGE_WRITE;
}
