-- Idempotency keys are scoped by who sent them (issue 34): a caller's key can no longer collide with another caller's,
-- nor with the engine's own keys (scope `rollplane`). Keys written before keep scope '' (no caller has it).
ALTER TABLE "Rollout" ADD COLUMN "idempotencyScope" TEXT NOT NULL DEFAULT '';
DROP INDEX "Rollout_idempotencyKey_key";
CREATE UNIQUE INDEX "Rollout_idempotencyScope_idempotencyKey_key" ON "Rollout"("idempotencyScope", "idempotencyKey");

ALTER TABLE "IdempotencyKey" ADD COLUMN "scope" TEXT NOT NULL DEFAULT '';
ALTER TABLE "IdempotencyKey" DROP CONSTRAINT "IdempotencyKey_pkey";
ALTER TABLE "IdempotencyKey" ADD CONSTRAINT "IdempotencyKey_pkey" PRIMARY KEY ("scope", "key");
