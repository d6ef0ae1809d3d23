-- Every replica keeps answers to history queries until the history changes (docs/adr/0026-response-cache.md). A
-- replica learns of another replica's commits from this announcement: NOTIFY is delivered at COMMIT (never for a
-- transaction that rolled back), and identical notifications of one transaction are folded into one.
CREATE FUNCTION "rollplane_announce_history_write"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('rollplane_writes', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER "Rollout_announce_write" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "Rollout"
  FOR EACH STATEMENT EXECUTE FUNCTION "rollplane_announce_history_write"();
CREATE TRIGGER "RolloutTarget_announce_write" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "RolloutTarget"
  FOR EACH STATEMENT EXECUTE FUNCTION "rollplane_announce_history_write"();
CREATE TRIGGER "Revision_announce_write" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "Revision"
  FOR EACH STATEMENT EXECUTE FUNCTION "rollplane_announce_history_write"();
CREATE TRIGGER "Event_announce_write" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "Event"
  FOR EACH STATEMENT EXECUTE FUNCTION "rollplane_announce_history_write"();
