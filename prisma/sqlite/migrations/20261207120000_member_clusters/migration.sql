-- Member clusters (issue 29, docs/adr/0048-member-clusters.md): the registry of the clusters rollplane drives, `local`
-- among them (registered at start). A new table only: nothing existing changes; no credential is ever stored here.

-- CreateTable
CREATE TABLE "MemberCluster" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "labels" TEXT NOT NULL DEFAULT '{}',
    "source" TEXT NOT NULL,
    "sourceRef" TEXT NOT NULL DEFAULT '',
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    "health" TEXT NOT NULL DEFAULT 'CONNECTING',
    "healthSince" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "healthMessage" TEXT,
    "serverVersion" TEXT,
    "kinds" TEXT NOT NULL DEFAULT '[]'
);
