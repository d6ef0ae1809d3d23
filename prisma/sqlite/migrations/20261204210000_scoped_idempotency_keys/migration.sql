-- Idempotency keys are scoped by who sent them (issue 34): a caller's key can no longer collide with another caller's,
-- nor with the engine's own keys (scope `rollplane`). Keys written before keep scope '' (no caller has it).
-- Rollout: the column is appended (no table rebuild of the history); the unique key becomes (scope, key).
ALTER TABLE "Rollout" ADD COLUMN "idempotencyScope" TEXT NOT NULL DEFAULT '';
DROP INDEX "Rollout_idempotencyKey_key";
CREATE UNIQUE INDEX "Rollout_idempotencyScope_idempotencyKey_key" ON "Rollout"("idempotencyScope", "idempotencyKey");

-- IdempotencyKey: the primary key becomes (scope, key); SQLite changes a primary key only by redefining the table.
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_IdempotencyKey" (
    "scope" TEXT NOT NULL DEFAULT '',
    "key" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "requestHash" TEXT NOT NULL,
    "rolloutId" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("scope", "key")
);
INSERT INTO "new_IdempotencyKey" ("createdAt", "key", "operation", "requestHash", "rolloutId") SELECT "createdAt", "key", "operation", "requestHash", "rolloutId" FROM "IdempotencyKey";
DROP TABLE "IdempotencyKey";
ALTER TABLE "new_IdempotencyKey" RENAME TO "IdempotencyKey";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
