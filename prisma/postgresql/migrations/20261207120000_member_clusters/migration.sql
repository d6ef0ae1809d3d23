-- Member clusters (issue 29, docs/adr/0048-member-clusters.md): the registry of the clusters rollplane drives, `local`
-- among them (registered at start). A new table only: nothing existing changes; no credential is ever stored here.

-- CreateTable
CREATE TABLE "MemberCluster" (
    "name" TEXT NOT NULL,
    "labels" TEXT NOT NULL DEFAULT '{}',
    "source" TEXT NOT NULL,
    "sourceRef" TEXT NOT NULL DEFAULT '',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "health" TEXT NOT NULL DEFAULT 'CONNECTING',
    "healthSince" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "healthMessage" TEXT,
    "serverVersion" TEXT,
    "kinds" TEXT NOT NULL DEFAULT '[]',

    CONSTRAINT "MemberCluster_pkey" PRIMARY KEY ("name")
);
