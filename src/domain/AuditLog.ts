import type { PrismaClient } from '../store/db.js';
import { checkPageSize, decodeCursor, encodeCursor } from './pagination.js';

export interface AuditRecord {
  actor: string | null;
  role: string | null;
  operation: string;
  input: unknown;
  /** OK, or the error code. */
  result: string;
  message?: string | null;
  sourceAddr?: string | null;
}

/** Keys whose values never reach the audit log (token secrets and the like). */
const SECRET_KEYS = /secret|token|password|authorization/i;
/** Each entry's input (operation text and variables) is cut to this: rows stay small whatever a caller sends. */
const MAX_INPUT_CHARS = 4096;
const DAY_MS = 24 * 3600 * 1000;

function redact(value: unknown, depth = 0): unknown {
  if (depth > 20) return '[too deep]';
  if (Array.isArray(value)) return value.slice(0, 1000).map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEYS.test(k) && typeof v === 'string' ? '[redacted]' : redact(v, depth + 1)]));
  }
  return value;
}

export interface AuditRetention {
  /** Entries older than this are pruned. */
  days: number;
  /** The oldest entries beyond this many are pruned. */
  maxEntries: number;
}

/**
 * Every authenticated mutation, accepted or refused: who, what, result, when, from where. Bounded twice: each entry's
 * size (MAX_INPUT_CHARS), and the log's age and length (`prune`, run by the app at start and hourly).
 */
export class AuditLog {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly now: () => number = Date.now,
  ) {}

  /** Deletes entries past the retention; returns how many went. */
  async prune(retention: AuditRetention): Promise<number> {
    const byAge = await this.prisma.auditEntry.deleteMany({ where: { createdAt: { lt: new Date(this.now() - retention.days * DAY_MS) } } });
    // The newest entry beyond the cap: every id at or below it goes.
    const cutoff = await this.prisma.auditEntry.findFirst({ orderBy: { id: 'desc' }, skip: retention.maxEntries, select: { id: true } });
    const byCount = cutoff ? await this.prisma.auditEntry.deleteMany({ where: { id: { lte: cutoff.id } } }) : { count: 0 };
    return byAge.count + byCount.count;
  }

  async record(entry: AuditRecord): Promise<void> {
    let input = JSON.stringify(redact(entry.input ?? {}));
    if (input.length > MAX_INPUT_CHARS) input = JSON.stringify({ truncated: true, prefix: input.slice(0, MAX_INPUT_CHARS / 2 - 32) }); // re-escaping can double it
    await this.prisma.auditEntry.create({
      data: {
        actor: entry.actor,
        role: entry.role,
        operation: entry.operation.slice(0, 200),
        input,
        result: entry.result,
        message: entry.message?.slice(0, 2000) ?? null,
        sourceAddr: entry.sourceAddr ?? null,
      },
    });
  }

  /** Newest first. */
  async list(first: number | undefined, after: string | undefined) {
    const size = checkPageSize(first, 100);
    const cursor = decodeCursor(after, (v): v is { id: number } => typeof v === 'object' && v !== null && typeof (v as { id: unknown }).id === 'number');
    const rows = await this.prisma.auditEntry.findMany({ where: cursor ? { id: { lt: cursor.id } } : {}, orderBy: { id: 'desc' }, take: size + 1 });
    const items = rows.slice(0, size).map((r) => ({ ...r, input: JSON.parse(r.input) as unknown, sourceAddress: r.sourceAddr }));
    return { items, hasNextPage: rows.length > size, cursorOf: (e: { id: number }) => encodeCursor({ id: e.id }) };
  }
}
