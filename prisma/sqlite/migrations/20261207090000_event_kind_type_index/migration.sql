-- The newest state change of one kind's rollouts (`kind` and `type` in (RolloutStateChanged, TargetStateChanged)) is
-- read on every agent-pool and drift query, to know whether the history's decisions changed since the last one
-- (AgentPoolChoices). No (kind, type, id) index served it, so it read windows of 10,000 ids until it met one: 20 ms a
-- query with 100,000 events of other kinds. Now one search per type (docs/adr/0036-bounded-event-reads.md).
-- CreateIndex
CREATE INDEX "Event_kind_type_id_idx" ON "Event"("kind", "type", "id");
