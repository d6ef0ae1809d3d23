import { ConflictError, NotFoundError } from '../../../errors.js';
import { kubeCall, type KubeClients, mergePatchOptions, writeOutcomeUnknown } from '../../../kube/index.js';
import { ANNOTATION_HELD_BY, ANNOTATION_HOLD, IPPOOL_GROUP, IPPOOL_PLURAL, IPPOOL_VERSION, poolKey, ROLLPLANE_HOLD_VALUE } from './names.js';
import { settleLostWrite } from './settleLostWrite.js';
import type { IPPool } from './types.js';

/** rollplane's annotations to write onto a pool (the hold and its marker); null takes one off. */
export type HoldAnnotations = Record<string, string | null>;

/** rollplane's hold of a pool for a rollout (its marker says whose). */
export const holdFor = (rolloutId: string): HoldAnnotations => ({ [ANNOTATION_HOLD]: ROLLPLANE_HOLD_VALUE, [ANNOTATION_HELD_BY]: rolloutId });
/** rollplane's hold and its marker, taken off. */
export const RELEASE: HoldAnnotations = Object.freeze({ [ANNOTATION_HOLD]: null, [ANNOTATION_HELD_BY]: null });

/** One merge patch's options for every hold write: they take the plain JSON path (src/kube/jsonRequests.ts). */
const mergePatch = mergePatchOptions();

/**
 * What to write now that the pool is `current` (it changed since the write was decided, or a lost write was settled);
 * undefined: nothing any more.
 */
export type Redecide = (current: IPPool) => HoldAnnotations | undefined;

/** The pool after the write; `gone`: deleted meanwhile; `declined`: changed meanwhile so that nothing is to be written. */
export type HoldWriteResult = IPPool | 'gone' | 'declined';

/** Written onto a pool to fence off a hold write whose answer was lost (its value: when). */
export const ANNOTATION_HOLD_WRITE_FENCE = 'rollplane.io/hold-write-fence';

/** The reason (details.reason) of an error thrown while a hold write is unsettled. */
export const UNSETTLED_HOLD_WRITE = 'HOLD_WRITE_UNSETTLED';

/** Conflicts (the pool changed under the write) read again and decide again this many times before giving up. */
const CONFLICT_ATTEMPTS = 5;

interface Unsettled {
  namespace: string;
  name: string;
  /** The resourceVersion the lost write was conditional on. */
  resourceVersion: string;
}

/**
 * rollplane's hold and release writes on IPPools, so that one whose answer was lost can never land later (attack 20,
 * F1 and F2). Such a write may wait in a proxy, or commit after the API server answered 504: a release landing after
 * prepare had held the pool again moved it beside the rollout's own admission (two agents down under maxUnavailable
 * 1); a hold landing after its rollout released the pool stranded it until the rollout failed.
 *
 * Every write is a merge patch conditional on the resourceVersion it was decided on, so of all its copies (a lost one,
 * a retry) at most one lands, and none once anything else changed the pool. A conflict reads the pool and asks the
 * caller again what to write (`Redecide`). A lost answer is settled before the call returns, as the `--image` write's
 * (ImageWriteFence.ts, ADR 0074): the pool read again carries another resourceVersion — the write landed or never can;
 * the same — a fence annotation is written on that version, after which it never can. Then the caller decides again
 * from what the pool says. A write that cannot be settled now throws HOLD_WRITE_UNSETTLED and is settled before the
 * next write to that pool (and by `settleAll`, before prepare moves the controller).
 */
export class PoolHoldWrites {
  private readonly unsettled = new Map<string, Unsettled>();

  constructor(private readonly clients: KubeClients) {}

  /**
   * Writes `annotations` onto `pool` as it was read (its resourceVersion); see the class comment. `beforeResend` runs
   * before a write decided again is sent (after a conflict or a settled lost answer): the release dates its
   * recreation from the write that lands.
   */
  async write(pool: IPPool, annotations: HoldAnnotations, redecide: Redecide, beforeResend?: () => Promise<void>): Promise<HoldWriteResult> {
    const namespace = pool.metadata!.namespace!;
    const name = pool.metadata!.name!;
    // An earlier write here whose answer was lost: settled first, and the write decided again on what the pool is now.
    const settled = await this.settleOrThrow(namespace, name);
    if (settled === null) return 'gone';
    let current: IPPool | undefined = settled ?? pool;
    let wanted: HoldAnnotations | undefined = settled ? redecide(settled) : annotations;
    for (let attempt = 0; attempt < CONFLICT_ATTEMPTS; attempt++) {
      if (!wanted) return 'declined';
      if (attempt > 0 || settled) await beforeResend?.();
      const resourceVersion = current.metadata?.resourceVersion;
      try {
        return await this.patch(namespace, name, { resourceVersion, annotations: wanted }, 'annotate');
      } catch (error) {
        if (error instanceof NotFoundError) return 'gone';
        if (error instanceof ConflictError) {
          current = await this.read(namespace, name);
        } else if (writeOutcomeUnknown(error) && resourceVersion) {
          this.unsettled.set(poolKey(namespace, name), { namespace, name, resourceVersion });
          const outcome = await this.settle(namespace, name);
          if (outcome === 'unknown') throw new UnsettledHoldWriteError(namespace, name, { cause: error });
          current = outcome ?? undefined;
          if (current && applied(current, wanted)) return current; // it landed
        } else {
          throw error;
        }
        if (!current) return 'gone';
        wanted = redecide(current);
      }
    }
    throw new ConflictError(`ippool ${namespace}/${name} kept changing under rollplane's hold write; asked again on the next pass`);
  }

  /** Settles every unsettled write; throws HOLD_WRITE_UNSETTLED when one cannot be settled now. */
  async settleAll(): Promise<void> {
    for (const { namespace, name } of [...this.unsettled.values()]) await this.settleOrThrow(namespace, name);
  }

  /** Whether a write to the pool is unsettled. */
  isUnsettled(namespace: string, name: string): boolean {
    return this.unsettled.has(poolKey(namespace, name));
  }

  /** The pool's unsettled write, settled: the pool as read then (null: gone), or undefined when none was pending. */
  private async settleOrThrow(namespace: string, name: string): Promise<IPPool | null | undefined> {
    if (!this.unsettled.has(poolKey(namespace, name))) return undefined;
    const outcome = await this.settle(namespace, name);
    if (outcome === 'unknown') throw new UnsettledHoldWriteError(namespace, name);
    return outcome;
  }

  /** The pool once its unsettled write can no longer land (null: gone); `unknown` keeps it to ask again. */
  private async settle(namespace: string, name: string): Promise<IPPool | null | 'unknown'> {
    const key = poolKey(namespace, name);
    const write = this.unsettled.get(key);
    if (!write) return (await this.read(namespace, name)) ?? null;
    const outcome = await settleLostWrite({
      resourceVersion: write.resourceVersion,
      read: () => this.read(namespace, name),
      versionOf: (pool) => pool.metadata?.resourceVersion,
      fence: (resourceVersion) =>
        this.patch(namespace, name, { resourceVersion, annotations: { [ANNOTATION_HOLD_WRITE_FENCE]: new Date().toISOString() } }, 'fence the hold write to'),
    });
    if (outcome !== 'unknown') this.unsettled.delete(key);
    return outcome;
  }

  private async patch(namespace: string, name: string, metadata: { resourceVersion?: string; annotations: HoldAnnotations }, what: string): Promise<IPPool> {
    return (await kubeCall(`${what} ippool ${namespace}/${name}`, () =>
      this.clients.custom.patchNamespacedCustomObject(
        { group: IPPOOL_GROUP, version: IPPOOL_VERSION, plural: IPPOOL_PLURAL, namespace, name, body: { metadata } },
        mergePatch,
      ),
    )) as IPPool;
  }

  private async read(namespace: string, name: string): Promise<IPPool | undefined> {
    try {
      return (await kubeCall(`read ippool ${namespace}/${name}`, () =>
        this.clients.custom.getNamespacedCustomObject({ group: IPPOOL_GROUP, version: IPPOOL_VERSION, plural: IPPOOL_PLURAL, namespace, name }),
      )) as IPPool;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
}

/** The pool's annotations are as `wanted` says (null: absent). */
function applied(pool: IPPool, wanted: HoldAnnotations): boolean {
  const annotations = pool.metadata?.annotations ?? {};
  return Object.entries(wanted).every(([key, value]) => (value === null ? annotations[key] === undefined : annotations[key] === value));
}

/** A hold write got no answer, and whether it landed is not known yet: nothing relies on the pool until it is. */
export class UnsettledHoldWriteError extends ConflictError {
  constructor(namespace: string, name: string, options: { cause?: unknown } = {}) {
    super(
      `rollplane's hold write to ippool ${namespace}/${name} got no answer, and whether it landed is not known yet: asked again before anything else is written there`,
      { ...options, details: { reason: UNSETTLED_HOLD_WRITE } },
    );
  }
}
