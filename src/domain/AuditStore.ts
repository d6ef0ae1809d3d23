/** One audit entry as stored (input is JSON text, already redacted and bounded by AuditLog). */
export interface AuditRow {
  id: number;
  actor: string | null;
  role: string | null;
  operation: string;
  input: string;
  result: string;
  message: string | null;
  sourceAddr: string | null;
  /** The one member cluster the operation addressed, or null (none, several, or written before clusters; ADR 0054). */
  cluster: string | null;
  createdAt: Date;
}

/** Where the audit log is kept (store/sqlite/SqliteAuditStore.ts, store/postgres/PgAuditStore.ts; one contract suite). */
export interface AuditStore {
  insert(entry: Omit<AuditRow, 'id' | 'createdAt' | 'cluster'> & { cluster?: string | null }, now: Date): Promise<void>;
  /** Deletes entries created before `cutoff`; returns how many went. */
  deleteBefore(cutoff: Date): Promise<number>;
  /** Deletes all but the newest `keep` entries; returns how many went. */
  keepNewest(keep: number): Promise<number>;
  /** Entries with id < beforeId, newest first. */
  page(beforeId: number | undefined, limit: number): Promise<AuditRow[]>;
}
