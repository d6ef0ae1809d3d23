import { ConflictError, NotFoundError } from '../../../errors.js';

/** Reads and fences one lost write before giving up for now (a conflict in between reads again). */
const SETTLE_ATTEMPTS = 3;

/** A write conditional on a resourceVersion whose answer was lost, and how to look at and fence its object. */
export interface LostWrite<T> {
  /** The resourceVersion the lost write was conditional on. */
  resourceVersion: string;
  /** The object as it is now (a GET, not the cache); undefined when it is gone. */
  read(): Promise<T | undefined>;
  versionOf(object: T): string | undefined;
  /** The object shows the write landed: settled, whatever its version (no fence needed). */
  landed?(object: T): boolean;
  /** Writes a fence annotation conditional on `resourceVersion`; the object after it. */
  fence(resourceVersion: string): Promise<T>;
}

/**
 * Settles a lost write so that it can never land later (ADR 0074): the object read again carries another
 * resourceVersion — the write landed or never can (its precondition is stale); the same — a fence is written
 * conditional on that version, after which it never can. A conflict between the read and the fence reads again.
 * Returns the object once the write can no longer land (as read, or as fenced), null when the object is gone, and
 * `unknown` when it could not be read or fenced now (the caller keeps the write to settle later).
 */
export async function settleLostWrite<T>(write: LostWrite<T>): Promise<T | null | 'unknown'> {
  for (let attempt = 0; attempt < SETTLE_ATTEMPTS; attempt++) {
    try {
      const now = await write.read();
      if (!now || write.landed?.(now) || write.versionOf(now) !== write.resourceVersion) return now ?? null;
      // Unchanged since the write read it: it may still come. A change of this version fences it off for good.
      return await write.fence(write.resourceVersion);
    } catch (error) {
      if (error instanceof ConflictError) continue; // changed between the read and the fence: read again
      if (error instanceof NotFoundError) return null;
      return 'unknown';
    }
  }
  return 'unknown';
}
