-- Gates that ask outside (issue 30's external check, issue 33's alert gate; docs/adr/0068-gates-that-ask-outside.md):
-- every answer kept, numbered per gate. A new table only: nothing existing is rebuilt, so nothing cascades (ADR 0046).

-- CreateTable
CREATE TABLE "GateAttempt" (
    "gateId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "startedAt" DATETIME NOT NULL,
    "at" DATETIME NOT NULL,
    "answer" TEXT NOT NULL,
    "afterMs" INTEGER,
    "reason" TEXT NOT NULL,

    PRIMARY KEY ("gateId", "seq"),
    CONSTRAINT "GateAttempt_gateId_fkey" FOREIGN KEY ("gateId") REFERENCES "RolloutGate" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
