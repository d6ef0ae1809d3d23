-- Analysis templates by name (issue 33; docs/adr/0071-analysis-between-targets.md). A new table only.

-- CreateTable
CREATE TABLE "AnalysisTemplate" (
    "name" TEXT NOT NULL,
    "template" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AnalysisTemplate_pkey" PRIMARY KEY ("name")
);
