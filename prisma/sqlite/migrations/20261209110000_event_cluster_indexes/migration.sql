-- A read about one object names its cluster (issue 29, docs/adr/0060-member-metrics-routing-and-caps.md): Event's
-- per-object indexes take the cluster after the kind, so a member's pool and local's pool of the same namespace and
-- name each have their own history pages, served exactly by an index (not a window of ids). Indexes only: no table is
-- rebuilt (ADR 0046's trap does not arise), no row changes; events about no object (cluster NULL) are not read by them.

-- DropIndex
DROP INDEX "Event_kind_namespace_name_id_idx";
DROP INDEX "Event_kind_namespace_name_type_id_idx";
DROP INDEX "Event_namespace_name_id_idx";

-- CreateIndex
CREATE INDEX "Event_kind_cluster_namespace_name_id_idx" ON "Event"("kind", "cluster", "namespace", "name", "id");
CREATE INDEX "Event_kind_cluster_namespace_name_type_id_idx" ON "Event"("kind", "cluster", "namespace", "name", "type", "id");
CREATE INDEX "Event_cluster_namespace_name_id_idx" ON "Event"("cluster", "namespace", "name", "id");
