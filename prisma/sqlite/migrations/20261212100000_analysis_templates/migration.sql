-- Analysis templates by name (issue 33; docs/adr/0071-analysis-between-targets.md). A new table only: nothing existing
-- is rebuilt, so nothing cascades (ADR 0046).

-- CreateTable
CREATE TABLE "AnalysisTemplate" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "template" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "updatedAt" DATETIME NOT NULL
);
