-- The shared mutation rate limit (issue 15): one token bucket per caller for every replica.
-- CreateTable
CREATE TABLE "RateBucket" (
    "key" TEXT NOT NULL,
    "tokens" DOUBLE PRECISION NOT NULL,
    "refilledAt" DOUBLE PRECISION NOT NULL,
    "granted" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "RateBucket_pkey" PRIMARY KEY ("key")
);
