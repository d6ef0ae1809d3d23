-- AlterTable
ALTER TABLE "Rollout" ADD COLUMN "engineState" TEXT NOT NULL DEFAULT '{}';
