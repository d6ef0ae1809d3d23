-- A run's resolved queries, once per run and metric (attack 19, F5; docs/adr/0071-analysis-between-targets.md): a
-- measurement whose query is its run's stores "" instead of the text. A new table only: nothing existing is rebuilt,
-- so nothing cascades (ADR 0046), and measurements written before keep their text.

-- CreateTable
CREATE TABLE "AnalysisRunQuery" (
    "runId" TEXT NOT NULL,
    "metricName" TEXT NOT NULL,
    "query" TEXT NOT NULL,
    "baselineQuery" TEXT,

    PRIMARY KEY ("runId", "metricName"),
    CONSTRAINT "AnalysisRunQuery_runId_fkey" FOREIGN KEY ("runId") REFERENCES "AnalysisRun" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
