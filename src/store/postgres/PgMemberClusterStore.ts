import type pg from 'pg';
import type { MemberClusterStore, PutOutcome } from '../../domain/clusters/MemberClusterStore.js';
import type { ClusterHealth, ClusterRegistration, ClusterSource, MemberClusterRecord } from '../../domain/clusters/model.js';
import {
  FIND_MEMBER_CLUSTER,
  kindsText,
  labelsText,
  LIST_MEMBER_CLUSTERS,
  type MemberClusterRow,
  memberClusterOf,
  PUT_MEMBER_CLUSTER,
  PUT_MEMBER_CLUSTER_IF_ABSENT,
  RECORD_MEMBER_CLUSTER_HEALTH,
  RECORD_MEMBER_CLUSTER_HEALTH_IF,
  REMOVE_MEMBER_CLUSTER,
} from '../memberClusterRows.js';
import { isoOf, numbered } from './pool.js';

const date = (value: Date | string) => (typeof value === 'string' ? new Date(value) : value);

/** The member cluster registry on PostgreSQL, on the history's pg pool. */
export class PgMemberClusterStore implements MemberClusterStore {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  async list(): Promise<MemberClusterRecord[]> {
    return (await this.pool.query<MemberClusterRow>(LIST_MEMBER_CLUSTERS)).rows.map((row) => memberClusterOf(row, date));
  }

  async find(name: string): Promise<MemberClusterRecord | undefined> {
    const row = (await this.pool.query<MemberClusterRow>(numbered(FIND_MEMBER_CLUSTER), [name])).rows[0];
    return row && memberClusterOf(row, date);
  }

  async put(registration: ClusterRegistration, now: Date): Promise<PutOutcome> {
    const at = isoOf(now);
    const { name, source, sourceRef } = registration;
    // One statement, then a read: the read may see a later write of another replica, which is what it would report.
    const written = (
      await this.pool.query<{ createdAt: Date }>(numbered(PUT_MEMBER_CLUSTER), [name, labelsText(registration.labels), source, sourceRef, at, at, at])
    ).rows[0];
    const record = (await this.find(name))!;
    if (written) return { outcome: written.createdAt.getTime() === now.getTime() ? 'created' : 'updated', record };
    return { outcome: record.source === source ? 'unchanged' : 'taken', record };
  }

  async putIfAbsent(registration: ClusterRegistration, now: Date): Promise<boolean> {
    const at = isoOf(now);
    const { name, source, sourceRef } = registration;
    const result = await this.pool.query(numbered(PUT_MEMBER_CLUSTER_IF_ABSENT), [name, labelsText(registration.labels), source, sourceRef, at, at, at]);
    return (result.rowCount ?? 0) > 0;
  }

  async remove(name: string, source: ClusterSource): Promise<boolean> {
    return ((await this.pool.query(numbered(REMOVE_MEMBER_CLUSTER), [name, source])).rowCount ?? 0) > 0;
  }

  async recordHealth(name: string, health: ClusterHealth, onlyIf?: ClusterHealth['state']): Promise<boolean> {
    const { state, since, message, serverVersion, kinds } = health;
    const values = [state, isoOf(since), message, serverVersion, kindsText(kinds), name];
    const result = onlyIf
      ? await this.pool.query(numbered(RECORD_MEMBER_CLUSTER_HEALTH_IF), [...values, onlyIf])
      : await this.pool.query(numbered(RECORD_MEMBER_CLUSTER_HEALTH), values);
    return (result.rowCount ?? 0) > 0;
  }
}
