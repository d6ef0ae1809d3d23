-- CreateTable
CREATE TABLE "WriteProbe" (
    "holder" TEXT NOT NULL PRIMARY KEY,
    "checkedAt" DATETIME NOT NULL
);
