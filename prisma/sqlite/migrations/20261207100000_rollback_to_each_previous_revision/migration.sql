-- A rollback whose targets each go back to their own previous version (its original started from several versions)
-- had the text 'previous revision of each target' for its toVersion; it has NULL now (ADR 0046), and the API renders
-- the text from it. The column becomes nullable without rebuilding the table: a rebuild drops "Rollout", which inside
-- the migration's transaction (foreign keys on) would cascade to every RolloutTarget. toVersion is in no index or
-- constraint, so it can be added anew, filled, dropped and renamed (SQLite >= 3.35).
-- AlterTable
ALTER TABLE "Rollout" ADD COLUMN "toVersion_nullable" TEXT;

UPDATE "Rollout" SET "toVersion_nullable" = CASE
  WHEN "rollbackOfId" IS NOT NULL AND "toVersion" = 'previous revision of each target' THEN NULL
  ELSE "toVersion"
END;

ALTER TABLE "Rollout" DROP COLUMN "toVersion";

ALTER TABLE "Rollout" RENAME COLUMN "toVersion_nullable" TO "toVersion";
