import type { PutOutcome, MemberClusterStore } from '../../domain/clusters/MemberClusterStore.js';
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
import { dateOf, sqlDate, type Sql } from '../Sql.js';

const date = (value: Date | string) => (typeof value === 'string' ? dateOf(value) : value);

/** The member cluster registry on SQLite, on rollplane's prepared-statement connection (Sql.ts). */
export class SqliteMemberClusterStore implements MemberClusterStore {
  constructor(private readonly sql: Sql) {}

  private findNow(name: string): MemberClusterRecord | undefined {
    const row = this.sql.get<MemberClusterRow>(FIND_MEMBER_CLUSTER, name);
    return row && memberClusterOf(row, date);
  }

  async list(): Promise<MemberClusterRecord[]> {
    return this.sql.all<MemberClusterRow>(LIST_MEMBER_CLUSTERS).map((row) => memberClusterOf(row, date));
  }

  async find(name: string): Promise<MemberClusterRecord | undefined> {
    return this.findNow(name);
  }

  async put(registration: ClusterRegistration, now: Date): Promise<PutOutcome> {
    return this.sql.transaction((sql) => {
      const at = sqlDate(now);
      const { name, source, sourceRef } = registration;
      const written = sql.get<{ createdAt: string }>(PUT_MEMBER_CLUSTER, name, labelsText(registration.labels), source, sourceRef, at, at, at);
      const record = this.findNow(name)!;
      if (written) return { outcome: written.createdAt === at ? 'created' : 'updated', record };
      return { outcome: record.source === source ? 'unchanged' : 'taken', record };
    });
  }

  async putIfAbsent(registration: ClusterRegistration, now: Date): Promise<boolean> {
    const at = sqlDate(now);
    const { name, source, sourceRef } = registration;
    return this.sql.run(PUT_MEMBER_CLUSTER_IF_ABSENT, name, labelsText(registration.labels), source, sourceRef, at, at, at).changes > 0;
  }

  async remove(name: string, source: ClusterSource): Promise<boolean> {
    return this.sql.run(REMOVE_MEMBER_CLUSTER, name, source).changes > 0;
  }

  async recordHealth(name: string, health: ClusterHealth, onlyIf?: ClusterHealth['state']): Promise<boolean> {
    const { state, since, message, serverVersion, kinds } = health;
    const values = [state, sqlDate(since), message, serverVersion, kindsText(kinds), name];
    if (onlyIf) return this.sql.run(RECORD_MEMBER_CLUSTER_HEALTH_IF, ...values, onlyIf).changes > 0;
    return this.sql.run(RECORD_MEMBER_CLUSTER_HEALTH, ...values).changes > 0;
  }
}
