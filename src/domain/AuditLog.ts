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
const MAX_INPUT_CHARS = 16_384;

function redact(value: unknown, depth = 0): unknown {
  if (depth > 20) return '[too deep]';
  if (Array.isArray(value)) return value.slice(0, 1000).map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEYS.test(k) && typeof v === 'string' ? '[redacted]' : redact(v, depth + 1)]));
  }
  return value;
}

/** Every mutation, accepted or refused: who, what, result, when, from where. Kept like history (never pruned). */
export class AuditLog {
  constructor(private readonly prisma: PrismaClient) {}

  async record(entry: AuditRecord): Promise<void> {
    let input = JSON.stringify(redact(entry.input ?? {}));
    if (input.length > MAX_INPUT_CHARS) input = JSON.stringify({ truncated: true, prefix: input.slice(0, MAX_INPUT_CHARS) });
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
