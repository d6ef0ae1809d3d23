-- CreateTable
CREATE TABLE "InFlightChange" (
    "kind" TEXT NOT NULL,
    "namespace" TEXT NOT NULL DEFAULT '',
    "name" TEXT NOT NULL,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("kind", "namespace", "name")
);
