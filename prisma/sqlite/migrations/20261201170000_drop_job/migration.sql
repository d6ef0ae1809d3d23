-- The durable job queue (JobQueue/JobWorker) served no product path and is gone (issue 16).
-- DropIndex
DROP INDEX "Job_queue_state_runAt_idx";

-- DropIndex
DROP INDEX "Job_queue_key_key";

-- DropTable
DROP TABLE "Job";
