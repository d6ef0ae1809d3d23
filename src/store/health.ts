import type { Logger } from '../log.js';
import type { Database } from './db.js';
import { checkDiskSpace, diskSpaceOf } from './diskSpace.js';

/**
 * PostgreSQL: a replica whose database cannot be written cannot record anything its controllers do, so it neither
 * takes the leader lease nor keeps it, and a replica that can takes over (attack 10: a leader cut off from PostgreSQL
 * alone kept it, and every rollout waited for the partition to end). SQLite has one replica: no one to hand over to.
 */
export function leadershipGuard(db: Database): { canLead?: () => Promise<boolean> } {
  if (db.provider !== 'postgresql') return {};
  return {
    canLead: () =>
      db.store.checkWritable().then(
        () => true,
        () => false,
      ),
  };
}

/** /readyz's checks of the history: the database takes a write; on SQLite the disk under the file (advisory). */
export function historyReadiness(db: Database, sqliteFile: string | undefined, logger: Logger): { name: string; advisory?: boolean; check(): Promise<void> }[] {
  const checks: { name: string; advisory?: boolean; check(): Promise<void> }[] = [
    {
      name: 'database',
      async check() {
        if (!db.isOpen()) throw new Error('database closed');
        // A write, not a read: a full disk or a read-only volume leaves reads working and every mutation failing.
        await db.store.checkWritable().catch((error: unknown) => {
          // /readyz answers anyone with the message (no host or port); the detail is logged here.
          logger.warn({ err: (error as Error).cause ?? error }, `readiness: ${(error as Error).message}`);
          throw error;
        });
      },
    },
  ];
  if (sqliteFile) checks.push({ name: 'disk', advisory: true, check: async () => checkDiskSpace(await diskSpaceOf(sqliteFile), sqliteFile) });
  return checks;
}
