import Sqlite from 'better-sqlite3';

/** The name of the few seeded events at the positions a test asks for; no other seeded event has it. */
export const NEEDLE = 'needle';

/**
 * Writes `count` events into the SQLite file of a migrated database in one statement (about a second for 200,000),
 * for tests that need a long history: the API would take minutes to write it. The events are alike but for their
 * type, rollout, namespace and name (cycling over a few of each; AgentRecreated ones with what the API reads of them),
 * all stamped at one time in the past; the ones at `needles` (0-based positions) are named NEEDLE. Each is about an
 * object of `local`, with the cluster column every writer (and the cluster-key migration) gives it. Returns the first
 * id written.
 */
export function seedEventHistory(file: string, count: number, needles: readonly number[] = []): number {
  const db = new Sqlite(file);
  try {
    const first = ((db.prepare('SELECT MAX("id") AS id FROM "Event"').get() as { id: number | null }).id ?? 0) + 1;
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
       INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "payload", "createdAt", "cluster")
       SELECT CASE i % 4 WHEN 0 THEN 'RolloutStateChanged' WHEN 1 THEN 'TargetStateChanged' WHEN 2 THEN 'AgentRecreated' ELSE 'TargetFailed' END,
              'ro_seed' || (i / 50), 'AGENT_POOL', 'ns-' || (i % 20),
              CASE WHEN i IN (SELECT value FROM json_each(?)) THEN '${NEEDLE}' ELSE 'pool-' || (i % 500) END,
              CASE i % 4 WHEN 2 THEN '{"oldImage":"x/agent:v1","newImage":"x/agent:v2","reason":"drift","seconds":1}'
                         ELSE '{"from":"PENDING","to":"PROGRESSING"}' END,
              '2026-01-01T00:00:00.000+00:00', 'local'
         FROM n`,
    ).run(count, JSON.stringify(needles));
    return first;
  } finally {
    db.close();
  }
}
