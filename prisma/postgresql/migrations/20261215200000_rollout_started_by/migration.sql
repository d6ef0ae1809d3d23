-- Who started every rollout (issue 30): an approval gate between the targets of a rollout without waves can exclude
-- its starter, as a staged rollout's run already could (RolloutRun.startedBy). The column is appended, nullable: no
-- table is rebuilt, and rollouts written before keep null (a staged one's run still names its starter).

-- AlterTable
ALTER TABLE "Rollout" ADD COLUMN "startedBy" TEXT;
