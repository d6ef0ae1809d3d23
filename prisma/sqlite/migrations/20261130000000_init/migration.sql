-- CreateTable
CREATE TABLE "Rollout" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "fromVersion" TEXT,
    "toVersion" TEXT NOT NULL,
    "selector" TEXT NOT NULL DEFAULT '{}',
    "strategy" TEXT NOT NULL DEFAULT '{}',
    "causeActor" TEXT,
    "causeRunUrl" TEXT,
    "causeCommit" TEXT,
    "causeMessage" TEXT,
    "idempotencyKey" TEXT,
    "rollbackOfId" TEXT,
    "message" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    "startedAt" DATETIME,
    "finishedAt" DATETIME
);

-- CreateTable
CREATE TABLE "RolloutTarget" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "rolloutId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "namespace" TEXT NOT NULL DEFAULT '',
    "name" TEXT NOT NULL,
    "ordinal" INTEGER NOT NULL,
    "state" TEXT NOT NULL,
    "fromVersion" TEXT,
    "toVersion" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "skipReason" TEXT,
    "error" TEXT,
    "admittedAt" DATETIME,
    "finishedAt" DATETIME,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "RolloutTarget_rolloutId_fkey" FOREIGN KEY ("rolloutId") REFERENCES "Rollout" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Revision" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "kind" TEXT NOT NULL,
    "namespace" TEXT NOT NULL DEFAULT '',
    "name" TEXT NOT NULL,
    "n" INTEGER NOT NULL,
    "version" TEXT NOT NULL,
    "rolloutId" TEXT,
    "appliedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Revision_rolloutId_fkey" FOREIGN KEY ("rolloutId") REFERENCES "Rollout" ("id") ON DELETE SET NULL ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Event" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "type" TEXT NOT NULL,
    "rolloutId" TEXT,
    "kind" TEXT,
    "namespace" TEXT,
    "name" TEXT,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "Job" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "queue" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "state" TEXT NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "runAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "claimedBy" TEXT,
    "claimedUntil" DATETIME,
    "lastError" TEXT,
    "result" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    "completedAt" DATETIME
);

-- CreateTable
CREATE TABLE "ApiToken" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME,
    "revokedAt" DATETIME,
    "lastUsedAt" DATETIME
);

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "actor" TEXT,
    "role" TEXT,
    "operation" TEXT NOT NULL,
    "input" TEXT NOT NULL DEFAULT '{}',
    "result" TEXT NOT NULL,
    "message" TEXT,
    "sourceAddr" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "IdempotencyKey" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "operation" TEXT NOT NULL,
    "requestHash" TEXT NOT NULL,
    "rolloutId" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE UNIQUE INDEX "Rollout_idempotencyKey_key" ON "Rollout"("idempotencyKey");

-- CreateIndex
CREATE INDEX "Rollout_state_idx" ON "Rollout"("state");

-- CreateIndex
CREATE INDEX "Rollout_kind_createdAt_idx" ON "Rollout"("kind", "createdAt");

-- CreateIndex
CREATE INDEX "RolloutTarget_kind_namespace_name_idx" ON "RolloutTarget"("kind", "namespace", "name");

-- CreateIndex
CREATE INDEX "RolloutTarget_rolloutId_state_idx" ON "RolloutTarget"("rolloutId", "state");

-- CreateIndex
CREATE UNIQUE INDEX "RolloutTarget_rolloutId_namespace_name_key" ON "RolloutTarget"("rolloutId", "namespace", "name");

-- CreateIndex
CREATE UNIQUE INDEX "Revision_kind_namespace_name_n_key" ON "Revision"("kind", "namespace", "name", "n");

-- CreateIndex
CREATE INDEX "Event_type_id_idx" ON "Event"("type", "id");

-- CreateIndex
CREATE INDEX "Event_rolloutId_id_idx" ON "Event"("rolloutId", "id");

-- CreateIndex
CREATE INDEX "Event_kind_namespace_name_id_idx" ON "Event"("kind", "namespace", "name", "id");

-- CreateIndex
CREATE INDEX "Job_queue_state_runAt_idx" ON "Job"("queue", "state", "runAt");

-- CreateIndex
CREATE UNIQUE INDEX "Job_queue_key_key" ON "Job"("queue", "key");

-- CreateIndex
CREATE UNIQUE INDEX "ApiToken_name_key" ON "ApiToken"("name");

-- CreateIndex
CREATE UNIQUE INDEX "ApiToken_hash_key" ON "ApiToken"("hash");

-- CreateIndex
CREATE INDEX "AuditEntry_createdAt_idx" ON "AuditEntry"("createdAt");

