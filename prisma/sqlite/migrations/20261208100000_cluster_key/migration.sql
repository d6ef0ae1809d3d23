-- Every record carries its member cluster (issue 29, docs/adr/0054-cluster-key.md). What exists was written against
-- the one cluster rollplane drove, `local`: targets, revisions, in-flight work and the events about an object migrate
-- to it; a rollout's own events (no object) and audit entries stay NULL (no one cluster).
--
-- Written by hand, not as Prisma's table rebuild: the runner applies a migration in one transaction, where
-- `PRAGMA foreign_keys=OFF` does nothing (ADR 0046). Columns are added in place (ADD COLUMN with a constant default
-- fills every row) and the keys are dropped and created anew. InFlightChange alone is rebuilt, its primary key being
-- part of the table: nothing references it, so dropping it cascades to nothing.

-- AlterTable
ALTER TABLE "RolloutTarget" ADD COLUMN "cluster" TEXT NOT NULL DEFAULT 'local';
DROP INDEX "RolloutTarget_rolloutId_namespace_name_key";
CREATE UNIQUE INDEX "RolloutTarget_rolloutId_cluster_namespace_name_key" ON "RolloutTarget"("rolloutId", "cluster", "namespace", "name");
DROP INDEX "RolloutTarget_kind_namespace_name_idx";
CREATE INDEX "RolloutTarget_kind_cluster_namespace_name_idx" ON "RolloutTarget"("kind", "cluster", "namespace", "name");

-- AlterTable
ALTER TABLE "Revision" ADD COLUMN "cluster" TEXT NOT NULL DEFAULT 'local';
DROP INDEX "Revision_kind_namespace_name_n_key";
CREATE UNIQUE INDEX "Revision_cluster_kind_namespace_name_n_key" ON "Revision"("cluster", "kind", "namespace", "name", "n");

-- AlterTable
ALTER TABLE "Event" ADD COLUMN "cluster" TEXT;
UPDATE "Event" SET "cluster" = 'local' WHERE "name" IS NOT NULL;

-- AlterTable
ALTER TABLE "AuditEntry" ADD COLUMN "cluster" TEXT;

-- RedefineTable (no table references InFlightChange)
CREATE TABLE "new_InFlightChange" (
    "kind" TEXT NOT NULL,
    "namespace" TEXT NOT NULL DEFAULT '',
    "name" TEXT NOT NULL,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "cluster" TEXT NOT NULL DEFAULT 'local',

    PRIMARY KEY ("cluster", "kind", "namespace", "name")
);
INSERT INTO "new_InFlightChange" ("kind", "namespace", "name", "payload", "createdAt") SELECT "kind", "namespace", "name", "payload", "createdAt" FROM "InFlightChange";
DROP TABLE "InFlightChange";
ALTER TABLE "new_InFlightChange" RENAME TO "InFlightChange";
