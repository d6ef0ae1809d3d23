-- Notifications through a transactional outbox (issue 32, docs/adr/0035-notifications-outbox.md): subscriptions, one
-- delivery row per (subscription, event) written in the event's own transaction, the Slack thread of each rollout, and
-- the generation every writer of events routes by. New tables only: nothing existing changes.

-- CreateTable
CREATE TABLE "NotificationSubscription" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "sinkKind" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "secret" TEXT NOT NULL DEFAULT '',
    "channel" TEXT NOT NULL DEFAULT '',
    "filter" TEXT NOT NULL DEFAULT '{}',
    "oncePer" TEXT NOT NULL DEFAULT '[]',
    "createdBy" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    "deletedAt" DATETIME,
    "lastAttemptAt" DATETIME,
    "lastStatusCode" INTEGER,
    "lastError" TEXT,
    "lastDeliveredAt" DATETIME
);

-- CreateTable
CREATE TABLE "NotificationDelivery" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "subscriptionId" TEXT NOT NULL,
    "eventId" INTEGER NOT NULL,
    "onceKey" TEXT,
    "lane" TEXT,
    "state" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" DATETIME,
    "lastAttemptAt" DATETIME,
    "lastStatusCode" INTEGER,
    "lastError" TEXT,
    "deliveredAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "NotificationThread" (
    "subscriptionId" TEXT NOT NULL,
    "rolloutId" TEXT NOT NULL,
    "threadTs" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("subscriptionId", "rolloutId")
);

-- CreateTable
CREATE TABLE "NotificationRouting" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "generation" INTEGER NOT NULL DEFAULT 0
);

-- CreateIndex
CREATE INDEX "NotificationSubscription_deletedAt_idx" ON "NotificationSubscription"("deletedAt");

-- CreateIndex
CREATE INDEX "NotificationDelivery_subscriptionId_state_nextAttemptAt_idx" ON "NotificationDelivery"("subscriptionId", "state", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "NotificationDelivery_state_createdAt_idx" ON "NotificationDelivery"("state", "createdAt");

-- CreateIndex
CREATE INDEX "NotificationDelivery_lane_state_eventId_idx" ON "NotificationDelivery"("lane", "state", "eventId");

-- CreateIndex
CREATE INDEX "NotificationDelivery_eventId_idx" ON "NotificationDelivery"("eventId");

-- CreateIndex
CREATE UNIQUE INDEX "NotificationDelivery_subscriptionId_eventId_key" ON "NotificationDelivery"("subscriptionId", "eventId");

-- CreateIndex
CREATE UNIQUE INDEX "NotificationDelivery_subscriptionId_onceKey_key" ON "NotificationDelivery"("subscriptionId", "onceKey");

-- The routing generation's one row: bumped with every change of the subscriptions.
INSERT INTO "NotificationRouting" ("id", "generation") VALUES ('subscriptions', 0);
