import { statfs } from 'node:fs/promises';
import path from 'node:path';

/**
 * Free space on the volume of the SQLite file, for /readyz's warning (issue 34, finding 9): the history and the audit
 * log grow on one volume (2 Gi in deploy/), and a full volume fails every mutation. The warning comes while there is
 * still time to act: below {@link LOW_DISK_SHARE} of the volume or {@link LOW_DISK_BYTES}, whichever is larger.
 */
export const LOW_DISK_SHARE = 0.1;
export const LOW_DISK_BYTES = 256 * 1024 * 1024;

export interface DiskSpace {
  freeBytes: number;
  totalBytes: number;
}

export async function diskSpaceOf(file: string): Promise<DiskSpace> {
  const stats = await statfs(path.dirname(file));
  return { freeBytes: stats.bavail * stats.bsize, totalBytes: stats.blocks * stats.bsize };
}

/** Throws the warning when `space` is low; the message says what to do. */
export function checkDiskSpace(space: DiskSpace, file: string): void {
  const threshold = Math.max(LOW_DISK_BYTES, space.totalBytes * LOW_DISK_SHARE);
  if (space.freeBytes >= threshold) return;
  const mib = (bytes: number) => `${Math.floor(bytes / (1024 * 1024))} MiB`;
  throw new Error(
    `the volume of ${path.basename(file)} has ${mib(space.freeBytes)} free of ${mib(space.totalBytes)}: grow it, or lower ROLLPLANE_AUDIT_MAX_ENTRIES / ROLLPLANE_AUDIT_RETENTION_DAYS before writes fail`,
  );
}
