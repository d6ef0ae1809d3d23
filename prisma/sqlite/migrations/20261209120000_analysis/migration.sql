-- Analysis (issue 33, docs/adr/0061-analysis-templates-and-measurements.md): every run of an analysis template and
-- every measurement it took. New tables only: nothing existing is rebuilt, so nothing cascades (ADR 0046).

-- CreateTable
CREATE TABLE "AnalysisRun" (
    "id" TEXT NOT NULL PRIMARY KEY,
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
    "startedAt" DATETIME NOT NULL,
    "finishedAt" DATETIME
);

-- CreateTable
CREATE TABLE "AnalysisMeasurement" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "metricName" TEXT NOT NULL,
    "query" TEXT NOT NULL,
    "result" TEXT NOT NULL DEFAULT '[]',
    "condition" TEXT,
    "threshold" REAL,
    "verdict" TEXT NOT NULL,
    "noData" BOOLEAN NOT NULL DEFAULT false,
    "dryRun" BOOLEAN NOT NULL DEFAULT false,
    "message" TEXT,
    "baselineQuery" TEXT,
    "baselineResult" TEXT,
    "startedAt" DATETIME NOT NULL,
    "finishedAt" DATETIME NOT NULL,
    CONSTRAINT "AnalysisMeasurement_runId_fkey" FOREIGN KEY ("runId") REFERENCES "AnalysisRun" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "AnalysisRun_rolloutId_startedAt_idx" ON "AnalysisRun"("rolloutId", "startedAt");

-- CreateIndex
CREATE INDEX "AnalysisRun_cluster_target_startedAt_idx" ON "AnalysisRun"("cluster", "target", "startedAt");

-- CreateIndex
CREATE INDEX "AnalysisMeasurement_runId_metricName_id_idx" ON "AnalysisMeasurement"("runId", "metricName", "id");
