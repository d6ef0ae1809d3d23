-- Gates that ask outside (issue 30's external check, issue 33's alert gate; docs/adr/0068-gates-that-ask-outside.md):
-- every answer kept, numbered per gate. A new table only: nothing existing is rebuilt.

-- CreateTable
CREATE TABLE "GateAttempt" (
    "gateId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,
    "answer" TEXT NOT NULL,
    "afterMs" INTEGER,
    "reason" TEXT NOT NULL,

    CONSTRAINT "GateAttempt_pkey" PRIMARY KEY ("gateId","seq")
);

-- AddForeignKey
ALTER TABLE "GateAttempt" ADD CONSTRAINT "GateAttempt_gateId_fkey" FOREIGN KEY ("gateId") REFERENCES "RolloutGate"("id") ON DELETE CASCADE ON UPDATE CASCADE;
