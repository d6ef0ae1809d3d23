-- A run's resolved queries, once per run and metric (attack 19, F5; docs/adr/0071-analysis-between-targets.md). A new
-- table only; measurements written before keep their text.

-- CreateTable
CREATE TABLE "AnalysisRunQuery" (
    "runId" TEXT NOT NULL,
    "metricName" TEXT NOT NULL,
    "query" TEXT NOT NULL,
    "baselineQuery" TEXT,

    CONSTRAINT "AnalysisRunQuery_pkey" PRIMARY KEY ("runId","metricName")
);

-- AddForeignKey
ALTER TABLE "AnalysisRunQuery" ADD CONSTRAINT "AnalysisRunQuery_runId_fkey" FOREIGN KEY ("runId") REFERENCES "AnalysisRun"("id") ON DELETE CASCADE ON UPDATE CASCADE;
