-- Per-policy window events (issue 30, docs/adr/0069-waves-bounds-filters-and-window-events.md): the state a maintenance
-- window policy last announced, so that each opening or closing is announced once whatever replica or restart sees it.
-- A column added in place: no table is rebuilt (ADR 0046).

-- AlterTable
ALTER TABLE "MaintenanceWindow" ADD COLUMN "announced" TEXT;
