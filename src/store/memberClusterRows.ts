import { CLUSTER_HEALTH_STATES, CLUSTER_SOURCES, type ClusterHealthState, type ClusterSource, type MemberClusterRecord } from '../domain/clusters/model.js';
import { ROLLOUT_KINDS, type RolloutKind } from '../domain/events.js';
import { canonicalJson } from '../util/canonicalJson.js';

/** The MemberCluster table's statements, shared by both stores (`?` placeholders; PostgreSQL numbers them). */

export const MEMBER_CLUSTER_COLUMNS =
  '"name", "labels", "source", "sourceRef", "createdAt", "updatedAt", "health", "healthSince", "healthMessage", "serverVersion", "kinds"';

export interface MemberClusterRow {
  name: string;
  labels: string;
  source: string;
  sourceRef: string;
  createdAt: Date | string;
  updatedAt: Date | string;
  health: string;
  healthSince: Date | string;
  healthMessage: string | null;
  serverVersion: string | null;
  kinds: string;
}

export const LIST_MEMBER_CLUSTERS = `SELECT ${MEMBER_CLUSTER_COLUMNS} FROM "MemberCluster" ORDER BY "name"`;
export const FIND_MEMBER_CLUSTER = `SELECT ${MEMBER_CLUSTER_COLUMNS} FROM "MemberCluster" WHERE "name" = ?`;

const INSERT = `INSERT INTO "MemberCluster" ("name", "labels", "source", "sourceRef", "createdAt", "updatedAt", "health", "healthSince", "kinds")
  VALUES (?, ?, ?, ?, ?, ?, 'CONNECTING', ?, '[]')`;

/**
 * Inserts, or updates a row of the same source whose labels or sourceRef differ; returns "createdAt" when it wrote
 * (equal to the time given: created), nothing when the row was left alone (unchanged, or another source's).
 */
export const PUT_MEMBER_CLUSTER = `${INSERT}
  ON CONFLICT ("name") DO UPDATE SET "labels" = excluded."labels", "sourceRef" = excluded."sourceRef", "updatedAt" = excluded."updatedAt"
  WHERE "MemberCluster"."source" = excluded."source"
    AND ("MemberCluster"."labels" <> excluded."labels" OR "MemberCluster"."sourceRef" <> excluded."sourceRef")
  RETURNING "createdAt"`;

export const PUT_MEMBER_CLUSTER_IF_ABSENT = `${INSERT} ON CONFLICT ("name") DO NOTHING`;

export const REMOVE_MEMBER_CLUSTER = 'DELETE FROM "MemberCluster" WHERE "name" = ? AND "source" = ?';

export const RECORD_MEMBER_CLUSTER_HEALTH =
  'UPDATE "MemberCluster" SET "health" = ?, "healthSince" = ?, "healthMessage" = ?, "serverVersion" = ?, "kinds" = ? WHERE "name" = ?';

/** The same, only while the row's health is still the given state (one statement: no probe's write is overwritten). */
export const RECORD_MEMBER_CLUSTER_HEALTH_IF = `${RECORD_MEMBER_CLUSTER_HEALTH} AND "health" = ?`;

/** Labels as stored: keys sorted, so that equal labels compare equal in SQL. */
export function labelsText(labels: Record<string, string>): string {
  return canonicalJson(labels);
}

export function kindsText(kinds: readonly RolloutKind[]): string {
  return JSON.stringify([...kinds].sort());
}

function oneOf<T extends string>(values: readonly T[], value: string, fallback: T): T {
  return (values as readonly string[]).includes(value) ? (value as T) : fallback;
}

function parsedObject(text: string): Record<string, string> {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
    }
  } catch {}
  return {};
}

function parsedKinds(text: string): RolloutKind[] {
  try {
    const value: unknown = JSON.parse(text);
    if (Array.isArray(value)) return value.filter((kind): kind is RolloutKind => (ROLLOUT_KINDS as readonly unknown[]).includes(kind));
  } catch {}
  return [];
}

export function memberClusterOf(row: MemberClusterRow, date: (value: Date | string) => Date): MemberClusterRecord {
  return {
    name: row.name,
    labels: parsedObject(row.labels),
    source: oneOf<ClusterSource>(CLUSTER_SOURCES, row.source, 'SECRET'),
    sourceRef: row.sourceRef,
    createdAt: date(row.createdAt),
    updatedAt: date(row.updatedAt),
    health: {
      state: oneOf<ClusterHealthState>(CLUSTER_HEALTH_STATES, row.health, 'CONNECTING'),
      since: date(row.healthSince),
      message: row.healthMessage,
      serverVersion: row.serverVersion,
      kinds: parsedKinds(row.kinds),
    },
  };
}
