import { ValidationError } from '../errors.js';

/** Largest page any connection returns; larger `first` values are refused rather than silently cut. */
export const MAX_PAGE_SIZE = 1000;

export interface Page<T> {
  items: T[];
  hasNextPage: boolean;
}

/** An item of a page with its cursor (a GraphQL connection's edge). */
export interface Edge<T> {
  cursor: string;
  node: T;
}

/** A page whose items carry their cursors, and how many items there are in all: a connection's parts. */
export interface KeyedPage<T> {
  items: Edge<T>[];
  hasNextPage: boolean;
  /** The last item's cursor; null on an empty page. */
  endCursor: string | null;
  totalCount: number;
}

/** Rows read with one more than `size` asked for: the extra row only tells that another page follows. */
export function pageOfRows<R>(rows: readonly R[], size: number): Page<R>;
export function pageOfRows<R, T>(rows: readonly R[], size: number, map: (row: R) => T): Page<T>;
export function pageOfRows<R, T>(rows: readonly R[], size: number, map?: (row: R) => T): Page<R | T> {
  const items = rows.slice(0, size);
  return { items: map ? items.map(map) : items, hasNextPage: rows.length > size };
}

/** The cursor of the last item of a page, or null on an empty page. */
export function endCursorOf<T>(items: readonly T[], cursorOf: (item: T) => string): string | null {
  return items.length ? cursorOf(items[items.length - 1]!) : null;
}

const isKeyCursor = (v: unknown): v is { k: string } => typeof v === 'object' && v !== null && typeof (v as { k: unknown }).k === 'string';

/**
 * One page of an in-memory list (informer caches) in the code-unit order of a string key: the items whose key sorts
 * after `after`'s, at most `first` of them (checked, `fallback` when not given). The cursor is the key, opaque. Keys
 * are built once per item (a comparator building them made a page of 200 pools build ~6,000 strings).
 */
export function pageByKey<T>(
  all: readonly T[],
  keyOf: (item: T) => string,
  first: number | null | undefined,
  after: string | null | undefined,
  fallback: number,
): KeyedPage<T> {
  const size = checkPageSize(first, fallback);
  const cursor = decodeCursor(after, isKeyCursor);
  const keyed = all.map((node) => ({ key: keyOf(node), node })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const rest = cursor ? keyed.filter((item) => item.key > cursor.k) : keyed;
  const items = rest.slice(0, size).map(({ key, node }) => ({ cursor: encodeCursor({ k: key }), node }));
  return { items, hasNextPage: rest.length > size, endCursor: endCursorOf(items, (edge) => edge.cursor), totalCount: all.length };
}

export function checkPageSize(first: number | null | undefined, fallback: number, max = MAX_PAGE_SIZE): number {
  const size = first ?? fallback;
  if (!Number.isInteger(size) || size < 1 || size > max) {
    throw new ValidationError('first', `must be an integer between 1 and ${max} (got ${size})`);
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
