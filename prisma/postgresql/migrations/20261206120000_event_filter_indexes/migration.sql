-- Two more (columns…, id) indexes of Event, so that the product's own filters are read through an index that serves
-- them exactly: (rolloutId, type) for `rollout --wait` (rolloutUpdated of one rollout), (kind, namespace, name, type)
-- for a target's latest event of one type (node agents, virtual clusters). Any other filter reads a window of ids at
-- a time (docs/adr/0036-bounded-event-reads.md).
-- CreateIndex
CREATE INDEX "Event_rolloutId_type_id_idx" ON "Event"("rolloutId", "type", "id");

-- CreateIndex
CREATE INDEX "Event_kind_namespace_name_type_id_idx" ON "Event"("kind", "namespace", "name", "type", "id");
