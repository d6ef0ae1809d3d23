-- CreateIndex
CREATE INDEX "Rollout_createdAt_id_idx" ON "Rollout"("createdAt", "id");

-- CreateIndex
CREATE INDEX "RolloutTarget_name_idx" ON "RolloutTarget"("name");

-- CreateIndex
CREATE INDEX "Event_namespace_name_id_idx" ON "Event"("namespace", "name", "id");

-- CreateIndex
CREATE INDEX "Event_createdAt_idx" ON "Event"("createdAt");

-- CreateIndex
CREATE INDEX "Event_kind_id_idx" ON "Event"("kind", "id");
