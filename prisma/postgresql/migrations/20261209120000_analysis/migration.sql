-- Analysis (issue 33, docs/adr/0061-analysis-templates-and-measurements.md): every run of an analysis template and
-- every measurement it took. New tables only: nothing existing changes.

-- CreateTable
CREATE TABLE "AnalysisRun" (
    "id" TEXT NOT NULL,
    "rolloutId" TEXT NOT NULL,
    "cluster" TEXT NOT NULL DEFAULT 'local',
    "target" TEXT,
    "wave" INTEGER,
    "templateName" TEXT NOT NULL DEFAULT '',
    "template" TEXT NOT NULL,
    "args" TEXT NOT NULL DEFAULT '{}',
    "phase" TEXT NOT NULL,
    "message" TEXT,
    "metricPhases" TEXT NOT NULL DEFAULT '{}',
    "previousRunId" TEXT,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "AnalysisRun_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AnalysisMeasurement" (
    "id" SERIAL NOT NULL,
    "runId" TEXT NOT NULL,
    "metricName" TEXT NOT NULL,
    "query" TEXT NOT NULL,
    "result" TEXT NOT NULL DEFAULT '[]',
    "condition" TEXT,
    "threshold" DOUBLE PRECISION,
    "verdict" TEXT NOT NULL,
    "noData" BOOLEAN NOT NULL DEFAULT false,
    "dryRun" BOOLEAN NOT NULL DEFAULT false,
    "message" TEXT,
    "baselineQuery" TEXT,
    "baselineResult" TEXT,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "finishedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AnalysisMeasurement_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "AnalysisRun_rolloutId_startedAt_idx" ON "AnalysisRun"("rolloutId", "startedAt");

-- CreateIndex
CREATE INDEX "AnalysisRun_cluster_target_startedAt_idx" ON "AnalysisRun"("cluster", "target", "startedAt");

-- CreateIndex
CREATE INDEX "AnalysisMeasurement_runId_metricName_id_idx" ON "AnalysisMeasurement"("runId", "metricName", "id");

-- AddForeignKey
ALTER TABLE "AnalysisMeasurement" ADD CONSTRAINT "AnalysisMeasurement_runId_fkey" FOREIGN KEY ("runId") REFERENCES "AnalysisRun"("id") ON DELETE CASCADE ON UPDATE CASCADE;
