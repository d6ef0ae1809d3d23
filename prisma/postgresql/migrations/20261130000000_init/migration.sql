-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Rollout" (
    "id" TEXT NOT NULL,
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
    "engineState" TEXT NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "Rollout_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RolloutTarget" (
    "id" TEXT NOT NULL,
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
    "admittedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RolloutTarget_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Revision" (
    "id" SERIAL NOT NULL,
    "kind" TEXT NOT NULL,
    "namespace" TEXT NOT NULL DEFAULT '',
    "name" TEXT NOT NULL,
    "n" INTEGER NOT NULL,
    "version" TEXT NOT NULL,
    "rolloutId" TEXT,
    "appliedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Revision_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Event" (
    "id" SERIAL NOT NULL,
    "type" TEXT NOT NULL,
    "rolloutId" TEXT,
    "kind" TEXT,
    "namespace" TEXT,
    "name" TEXT,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Event_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Job" (
    "id" TEXT NOT NULL,
    "queue" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "state" TEXT NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "runAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "claimedBy" TEXT,
    "claimedUntil" TIMESTAMP(3),
    "lastError" TEXT,
    "result" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "completedAt" TIMESTAMP(3),

    CONSTRAINT "Job_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiToken" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3),
    "revokedAt" TIMESTAMP(3),
    "lastUsedAt" TIMESTAMP(3),

    CONSTRAINT "ApiToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" SERIAL NOT NULL,
    "actor" TEXT,
    "role" TEXT,
    "operation" TEXT NOT NULL,
    "input" TEXT NOT NULL DEFAULT '{}',
    "result" TEXT NOT NULL,
    "message" TEXT,
    "sourceAddr" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AuditEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "IdempotencyKey" (
    "key" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "requestHash" TEXT NOT NULL,
    "rolloutId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "IdempotencyKey_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "InFlightChange" (
    "kind" TEXT NOT NULL,
    "namespace" TEXT NOT NULL DEFAULT '',
    "name" TEXT NOT NULL,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "InFlightChange_pkey" PRIMARY KEY ("kind","namespace","name")
);

-- CreateTable
CREATE TABLE "WriteProbe" (
    "holder" TEXT NOT NULL,
    "checkedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "WriteProbe_pkey" PRIMARY KEY ("holder")
);

-- CreateIndex
CREATE UNIQUE INDEX "Rollout_idempotencyKey_key" ON "Rollout"("idempotencyKey");

-- CreateIndex
CREATE INDEX "Rollout_state_idx" ON "Rollout"("state");

-- CreateIndex
CREATE INDEX "Rollout_kind_createdAt_idx" ON "Rollout"("kind", "createdAt");

-- CreateIndex
CREATE INDEX "Rollout_createdAt_id_idx" ON "Rollout"("createdAt", "id");

-- CreateIndex
CREATE INDEX "RolloutTarget_kind_namespace_name_idx" ON "RolloutTarget"("kind", "namespace", "name");

-- CreateIndex
CREATE INDEX "RolloutTarget_rolloutId_state_idx" ON "RolloutTarget"("rolloutId", "state");

-- CreateIndex
CREATE INDEX "RolloutTarget_name_idx" ON "RolloutTarget"("name");

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
CREATE INDEX "Event_namespace_name_id_idx" ON "Event"("namespace", "name", "id");

-- CreateIndex
CREATE INDEX "Event_kind_id_idx" ON "Event"("kind", "id");

-- CreateIndex
CREATE INDEX "Event_createdAt_idx" ON "Event"("createdAt");

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

-- AddForeignKey
ALTER TABLE "RolloutTarget" ADD CONSTRAINT "RolloutTarget_rolloutId_fkey" FOREIGN KEY ("rolloutId") REFERENCES "Rollout"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Revision" ADD CONSTRAINT "Revision_rolloutId_fkey" FOREIGN KEY ("rolloutId") REFERENCES "Rollout"("id") ON DELETE SET NULL ON UPDATE CASCADE;

