import type { AuditStore } from './AuditStore.js';
import { checkPageSize, decodeCursor, encodeCursor, pageOfRows } from '../util/pagination.js';

export interface AuditRecord {
  actor: string | null;
  role: string | null;
  operation: string;
  input: unknown;
  /** OK, or the error code. */
  result: string;
  message?: string | null;
  sourceAddr?: string | null;
  /** The one member cluster the operation addressed (a name, never a credential), or null (ADR 0054). */
  cluster?: string | null;
}

/**
 * Keys whose values never reach the audit log (token secrets, a member cluster's kubeconfig; `url`: a notification sink's, which for a
 * Slack incoming webhook is its secret).
 */
const SECRET_KEYS = /secret|token|password|authorization|kubeconfig|^url$/i;
/** Each entry's input (operation text and variables) is cut to this: rows stay small whatever a caller sends. */
const MAX_INPUT_CHARS = 4096;
const DAY_MS = 24 * 3600 * 1000;
/** How often the retention is applied (and once at start). */
const PRUNE_INTERVAL_MS = 3600_000;

/** Values visited per entry: an entry keeps at most MAX_INPUT_CHARS anyway, so walking more is wasted (and a lever). */
const MAX_REDACT_NODES = 2000;
const MAX_REDACT_STRING = 2000;

/** A bounded copy of `value` with secrets replaced; past the node budget, what is left becomes '[…]'. */
function redact(value: unknown): unknown {
  let budget = MAX_REDACT_NODES;
  const copy = (v: unknown, depth: number): unknown => {
    if (--budget < 0) return '[…]';
    if (depth > 20) return '[too deep]';
    if (typeof v === 'string') return v.length > MAX_REDACT_STRING ? `${v.slice(0, MAX_REDACT_STRING)}…` : v;
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      for (const item of v) {
        if (budget <= 0) break;
        out.push(copy(item, depth + 1));
      }
      return out;
    }
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const key in v) {
        if (budget <= 0) {
          out['…'] = 'truncated';
          break;
        }
        const child = (v as Record<string, unknown>)[key];
        out[key] = SECRET_KEYS.test(key) ? '[redacted]' : copy(child, depth + 1);
      }
      return out;
    }
    return v;
  };
  return copy(value, 0);
}

export interface AuditRetention {
  /** Entries older than this are pruned. */
  days: number;
  /** The oldest entries beyond this many are pruned. */
  maxEntries: number;
}

/**
 * Every authenticated mutation, accepted or refused: who, what, result, when, from where. Bounded twice: each entry's
 * size (MAX_INPUT_CHARS), and the log's age and length (`startPruning`: at start and hourly).
 */
export class AuditLog {
  constructor(
    private readonly store: AuditStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Deletes entries past the retention; returns how many went. */
  async prune(retention: AuditRetention): Promise<number> {
    const byAge = await this.store.deleteBefore(new Date(this.now() - retention.days * DAY_MS));
    return byAge + (await this.store.keepNewest(retention.maxEntries));
  }

  /**
   * Prunes now and then hourly until stopped; a failure is reported and the next hour tries again. Resolves once the
   * first prune is over (a start with a long backlog of entries prunes before it serves).
   */
  async startPruning(
    retention: AuditRetention,
    log: { info(fields: object, message: string): void; warn(fields: object, message: string): void },
  ): Promise<{ stop(): Promise<void> }> {
    const prune = () =>
      this.prune(retention).then(
        (pruned) => pruned > 0 && log.info({ pruned }, 'pruned audit entries past their retention'),
        (error: unknown) => log.warn({ err: error }, 'cannot prune the audit log'),
      );
    await prune();
    const timer = setInterval(() => void prune(), PRUNE_INTERVAL_MS);
    timer.unref();
    return { stop: async () => clearInterval(timer) };
  }

  async record(entry: AuditRecord): Promise<void> {
    let input = JSON.stringify(redact(entry.input ?? {}));
    if (input.length > MAX_INPUT_CHARS) input = JSON.stringify({ truncated: true, prefix: input.slice(0, MAX_INPUT_CHARS / 2 - 32) }); // re-escaping can double it
    await this.store.insert(
      {
        actor: entry.actor,
        role: entry.role,
        operation: entry.operation.slice(0, 200),
        input,
        result: entry.result,
        message: entry.message?.slice(0, 2000) ?? null,
        sourceAddr: entry.sourceAddr ?? null,
        cluster: entry.cluster ?? null,
      },
      new Date(this.now()),
    );
  }

  /** Newest first. */
  async list(first: number | undefined, after: string | undefined) {
    const size = checkPageSize(first, 100);
    const cursor = decodeCursor(after, (v): v is { id: number } => typeof v === 'object' && v !== null && typeof (v as { id: unknown }).id === 'number');
    const rows = await this.store.page(cursor?.id, size + 1);
    const page = pageOfRows(rows, size, (r) => ({ ...r, input: JSON.parse(r.input) as unknown, sourceAddress: r.sourceAddr }));
    return { ...page, cursorOf: (e: { id: number }) => encodeCursor({ id: e.id }) };
  }
}
