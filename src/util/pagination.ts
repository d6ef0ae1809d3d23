import { ValidationError } from '../errors.js';

/** Largest page any connection returns; larger `first` values are refused rather than silently cut. */
export const MAX_PAGE_SIZE = 1000;

export interface Page<T> {
  items: T[];
  hasNextPage: boolean;
}

export function checkPageSize(first: number | null | undefined, fallback: number): number {
  const size = first ?? fallback;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
    throw new ValidationError('first', `must be an integer between 1 and ${MAX_PAGE_SIZE} (got ${size})`);
  }
  return size;
}

/** Opaque cursors: base64url of a small JSON value. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor<T>(cursor: string | null | undefined, isValid: (value: unknown) => value is T): T | undefined {
  if (cursor === null || cursor === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (isValid(value)) return value;
  } catch {
    // fall through to the validation error
  }
  throw new ValidationError('after', 'not a cursor returned by this API');
}

/**
 * The largest event id there can be: `Event.id` is a 32-bit integer (`Int` in the schema: `integer` on PostgreSQL,
 * which refuses a larger value in a comparison, as SQLite does not).
 */
export const MAX_EVENT_ID = 2_147_483_647;

/** Event cursors are the event id itself, so that `after` means the same in queries and subscriptions. */
export function parseEventId(value: string | null | undefined, field = 'after'): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (!/^\d{1,10}$/.test(value) || Number(value) > MAX_EVENT_ID) {
    throw new ValidationError(field, `must be an event id (an integer from 0 to ${MAX_EVENT_ID}), got "${value.slice(0, 40)}"`);
  }
  return Number(value);
}
