-- Analysis as a gate (issue 33, docs/adr/0067-analysis-gate-service.md): a run names the gate and attempt it decides,
-- and each measurement its number within its metric, unique, so that a measurement written twice (a leader not quite
-- dead and its successor) is kept once. Columns added in place and filled by hand: no table is rebuilt, so nothing
-- cascades into the measurements (ADR 0046).

-- AlterTable
ALTER TABLE "AnalysisRun" ADD COLUMN "gateKey" TEXT;
ALTER TABLE "AnalysisRun" ADD COLUMN "attempt" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "AnalysisMeasurement" ADD COLUMN "seq" INTEGER NOT NULL DEFAULT 0;

-- Measurements taken before: numbered in the order they were taken, per run and metric.
UPDATE "AnalysisMeasurement" SET "seq" = (
    SELECT COUNT(*) FROM "AnalysisMeasurement" AS "earlier"
    WHERE "earlier"."runId" = "AnalysisMeasurement"."runId"
      AND "earlier"."metricName" = "AnalysisMeasurement"."metricName"
      AND "earlier"."id" < "AnalysisMeasurement"."id"
);

-- CreateIndex
CREATE UNIQUE INDEX "AnalysisRun_rolloutId_gateKey_attempt_key" ON "AnalysisRun"("rolloutId", "gateKey", "attempt");
CREATE INDEX "AnalysisRun_phase_idx" ON "AnalysisRun"("phase");
CREATE UNIQUE INDEX "AnalysisMeasurement_runId_metricName_seq_key" ON "AnalysisMeasurement"("runId", "metricName", "seq");
