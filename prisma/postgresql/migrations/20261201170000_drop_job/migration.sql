-- The durable job queue (JobQueue/JobWorker) served no product path and is gone (issue 16).
-- DropTable
DROP TABLE "Job";
