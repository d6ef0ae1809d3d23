-- A rollback whose targets each go back to their own previous version (its original started from several versions)
-- had the text 'previous revision of each target' for its toVersion; it has NULL now (ADR 0046), and the API renders
-- the text from it.
-- AlterTable
ALTER TABLE "Rollout" ALTER COLUMN "toVersion" DROP NOT NULL;

UPDATE "Rollout" SET "toVersion" = NULL WHERE "rollbackOfId" IS NOT NULL AND "toVersion" = 'previous revision of each target';
