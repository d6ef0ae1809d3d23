-- The shared mutation rate limit (issue 15); unused on SQLite, where one process keeps its buckets in memory.
-- CreateTable
CREATE TABLE "RateBucket" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "tokens" REAL NOT NULL,
    "refilledAt" REAL NOT NULL,
    "granted" BOOLEAN NOT NULL DEFAULT false
);
