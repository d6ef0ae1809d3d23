-- The rollouts to or from one version (RolloutFilter.version, issue 30), each side by its own index. Indexes only:
-- nothing existing is rebuilt.

-- CreateIndex
CREATE INDEX "Rollout_toVersion_idx" ON "Rollout"("toVersion");

-- CreateIndex
CREATE INDEX "Rollout_fromVersion_idx" ON "Rollout"("fromVersion");
