-- Every record carries its member cluster (issue 29, docs/adr/0054-cluster-key.md). What exists was written against
-- the one cluster rollplane drove, `local`: targets, revisions, in-flight work and the events about an object migrate
-- to it; a rollout's own events (no object) and audit entries stay NULL (no one cluster). ADD COLUMN with a constant
-- default rewrites no table (PostgreSQL >= 11).

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

-- AlterTable
ALTER TABLE "InFlightChange" ADD COLUMN "cluster" TEXT NOT NULL DEFAULT 'local';
ALTER TABLE "InFlightChange" DROP CONSTRAINT "InFlightChange_pkey";
ALTER TABLE "InFlightChange" ADD CONSTRAINT "InFlightChange_pkey" PRIMARY KEY ("cluster", "kind", "namespace", "name");
