-- A rollout's targets page in admission order (all, or in one state) through an index instead of a sort of every
-- target of the rollout (issue 17). (rolloutId, state, ordinal) replaces (rolloutId, state), its prefix.
-- DropIndex
DROP INDEX "RolloutTarget_rolloutId_state_idx";

-- CreateIndex
CREATE INDEX "RolloutTarget_rolloutId_state_ordinal_idx" ON "RolloutTarget"("rolloutId", "state", "ordinal");

-- CreateIndex
CREATE INDEX "RolloutTarget_rolloutId_ordinal_idx" ON "RolloutTarget"("rolloutId", "ordinal");
