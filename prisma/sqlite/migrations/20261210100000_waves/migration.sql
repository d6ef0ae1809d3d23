-- Staged rollouts (issue 30, docs/adr/0065-staged-runs-in-the-engine.md): the frozen wave plan of a rollout, its gates
-- and every decision taken at them. New tables only: nothing existing is rebuilt, so nothing cascades (ADR 0046).

-- CreateTable
CREATE TABLE "RolloutRun" (
    "rolloutId" TEXT NOT NULL PRIMARY KEY,
    "strategy" TEXT NOT NULL,
    "excluded" TEXT NOT NULL DEFAULT '[]',
    "failurePolicy" TEXT NOT NULL,
    "unreachable" TEXT NOT NULL DEFAULT 'WAIT',
    "startedBy" TEXT,
    "createdAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "RolloutWave" (
    "rolloutId" TEXT NOT NULL,
    "ordinal" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "clusters" TEXT NOT NULL,
    "maxConcurrency" INTEGER NOT NULL,
    "maxFailures" INTEGER NOT NULL,
    "minSuccessMs" INTEGER NOT NULL DEFAULT 0,
    "progressDeadlineSeconds" INTEGER,
    "mandatory" BOOLEAN NOT NULL DEFAULT false,
    "remainder" BOOLEAN NOT NULL DEFAULT false,
    "beforeGate" TEXT,
    "afterGate" TEXT,
    "state" TEXT NOT NULL DEFAULT 'PENDING',
    "reason" TEXT,
    "startedAt" DATETIME,
    "finishedAt" DATETIME,

    PRIMARY KEY ("rolloutId", "ordinal")
);

-- CreateTable
CREATE TABLE "RolloutGate" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "rolloutId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "config" TEXT NOT NULL DEFAULT '{}',
    "state" TEXT NOT NULL,
    "reason" TEXT NOT NULL DEFAULT '',
    "openedAt" DATETIME NOT NULL,
    "endedAt" DATETIME
);

-- CreateTable
CREATE TABLE "GateDecision" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "gateId" TEXT NOT NULL,
    "tokenId" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "decision" TEXT NOT NULL,
    "comment" TEXT,
    "at" DATETIME NOT NULL,
    CONSTRAINT "GateDecision_gateId_fkey" FOREIGN KEY ("gateId") REFERENCES "RolloutGate" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "MaintenanceWindow" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "definition" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "updatedAt" DATETIME NOT NULL
);

-- CreateIndex
CREATE UNIQUE INDEX "RolloutGate_rolloutId_key_key" ON "RolloutGate"("rolloutId", "key");

-- CreateIndex
CREATE INDEX "GateDecision_gateId_id_idx" ON "GateDecision"("gateId", "id");

