import { type EventFilter, type EventType, type StoredEvent, withFilterCluster } from '../domain/events.js';
import { EVENT_SCAN_WINDOW, type EventPage } from '../domain/historyPort.js';
import type { SqlValue } from './Sql.js';

/**
 * How both stores read pages of the Event table (docs/adr/0036-bounded-event-reads.md): one read touches at most
 * `limit` rows per type when an index of Event serves its filter exactly, and at most EVENT_SCAN_WINDOW rows
 * otherwise. The logic is written once, as a generator of statements that each store runs its own way (SQLite
 * synchronously, store/events.ts; PostgreSQL with a round trip each, PgHistoryStore.ts), so both read alike.
 */

/** The Event columns in StoredEvent's order (named rather than `*`: prepared statements survive a new column). */
export const EVENT_COLUMNS = '"id", "type", "rolloutId", "kind", "namespace", "name", "payload", "createdAt", "cluster"';

/** The columns an EventFilter compares for equality (`types` one branch per type). */
type EqualityColumn = 'type' | 'rolloutId' | 'kind' | 'namespace' | 'name' | 'cluster';

/**
 * The indexes of Event that end in its id (prisma/models/history.prisma; test/store/queryPlans.test.ts checks this
 * list against the database's): equality on exactly these columns walks one of them in id order, and every entry the
 * walk meets is a match. Column order as in the index.
 */
export const EVENT_ID_INDEXES: readonly (readonly EqualityColumn[])[] = [
  ['type'],
  ['rolloutId'],
  ['rolloutId', 'type'],
  ['kind'],
  ['kind', 'type'],
  ['kind', 'cluster', 'namespace', 'name'],
  ['kind', 'cluster', 'namespace', 'name', 'type'],
  ['cluster', 'namespace', 'name'],
];

/**
 * The columns a filter compares. A filter that names an object reads its cluster (`local` when it names none:
 * withFilterCluster, ADR 0060), so the per-object indexes, which have the cluster, serve it exactly.
 */
const FILTER_COLUMNS = ['rolloutId', 'kind', 'namespace', 'name', 'cluster'] as const;

/** The equality columns of one branch of a filter: its conditions, with `type` when the branch is one type's. */
function branchColumns(filter: EventFilter, typed: boolean): EqualityColumn[] {
  const columns: EqualityColumn[] = FILTER_COLUMNS.filter((column) => filter[column] !== undefined);
  return typed ? [...columns, 'type'] : columns;
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((column) => b.includes(column));
}

/** The name Prisma gives an index of Event (`Event_kind_id_idx`). */
export function eventIndexName(columns: readonly string[]): string {
  return `Event_${[...columns, 'id'].join('_')}_idx`;
}

/** The index that serves these equality columns exactly, if any (none is needed without any: the table's id order). */
function indexFor(columns: readonly EqualityColumn[]): readonly EqualityColumn[] | undefined {
  return EVENT_ID_INDEXES.find((index) => sameSet(index, columns));
}

/**
 * Whether an index serves the filter exactly: its columns are the filter's equality columns (per type, when it
 * names types; `since` only moves the starting id, see sinceSeek), so a read touches only rows it returns. No
 * condition at all walks the table itself in id order.
 */
export function servedByIndex(filter: EventFilter): boolean {
  const columns = branchColumns(withFilterCluster(filter), (filter.types?.length ?? 0) > 0);
  return columns.length === 0 || indexFor(columns) !== undefined;
}

/**
 * Where the store runs the statements. SQLite is told which index serves an exact read (INDEXED BY): without the
 * statistics of ANALYZE, which rollplane never runs, its planner took (kind, namespace, name, id) for a filter that
 * also names a type, and read every event of the target. PostgreSQL plans from its statistics (no hints exist).
 */
export type Dialect = 'sqlite' | 'postgresql';

/** A statement of a read, and what it answers: a page of events, or one id (null when there is none). */
export interface EventQuery {
  text: string;
  /** Dates as each store writes them; arrays only for PostgreSQL (`= ANY(?::text[])`). */
  params: (SqlValue | Date | readonly string[])[];
  returns: 'events' | 'id';
}
/** A read of a page: yields each statement, is given its answer back (StoredEvent[] or an id), returns the page. */
export type EventRead = Generator<EventQuery, EventPage, unknown>;

const LAST_ID: EventQuery = { text: 'SELECT MAX("id") AS "id" FROM "Event"', params: [], returns: 'id' };

/**
 * The first event created at or after `since`, through the createdAt index: the smallest createdAt from there, then
 * the smallest id among the events stamped with it (a transaction's events share one). Both stores stamp events in
 * id order (createdAt never decreases as ids grow, store/events.ts and PgHistoryStore's INSERT_EVENTS), so every
 * event from this id on is at or after `since` and none before it is: `since` becomes a starting id, not a condition
 * every row is checked against (MIN("id") WHERE "createdAt" >= ? walked the whole table in id order when nothing was
 * that recent: 150 ms at 492,000 events).
 */
function sinceSeek(since: Date): EventQuery {
  return {
    text: 'SELECT MIN("id") AS "id" FROM "Event" WHERE "createdAt" = (SELECT MIN("createdAt") FROM "Event" WHERE "createdAt" >= ?)',
    params: [since],
    returns: 'id',
  };
}

type Direction = 'after' | 'before';

/**
 * A read an index serves exactly: `id` beyond the position, in id order, limited. Several types become one ordered,
 * limited branch per type (each walks its own index range), merged and cut again: an `IN` over types would read and
 * sort every match.
 *
 * SQLite is told the index (INDEXED BY, see Dialect). PostgreSQL takes no hints, and with `"kind" = ?` it may walk
 * the primary key in id order and filter, as the (kind, id) index is ordered by id too once kind is a constant: for a
 * frequent kind it expects a few rows per match, but where that kind stopped occurring it walked the rest of the table.
 * So on PostgreSQL the index's first column is compared with `= ANY(array)`, which the planner does not treat as a
 * constant, and the order is the index's own (first column, id): the primary key cannot give that order, so the walk
 * is through the index, and every row it meets is a match.
 */
function exactStatement(
  filter: EventFilter,
  dialect: Dialect,
  direction: Direction,
  from: number | undefined,
  floor: number | undefined,
  limit: number,
): EventQuery {
  const types = filter.types ?? [];
  const order = direction === 'after' ? 'ASC' : 'DESC';
  if (types.length > 1) {
    const branches = types.map((type) => exactStatement({ ...filter, types: [type] }, dialect, direction, from, floor, limit));
    return {
      // Each branch is aliased: PostgreSQL (before 16) requires a name for a subquery in FROM; SQLite accepts one.
      text: `${branches.map((b, i) => `SELECT * FROM (${b.text}) AS b${i}`).join(' UNION ALL ')} ORDER BY "id" ${order} LIMIT ?`,
      params: [...branches.flatMap((b) => b.params), limit],
      returns: 'events',
    };
  }
  const index = indexFor(branchColumns(filter, types.length === 1)) ?? [];
  const lead = dialect === 'postgresql' ? index[0] : undefined;
  const conditions: string[] = [];
  const params: EventQuery['params'] = [];
  for (const column of index) {
    const value = column === 'type' ? (types[0] as EventType) : filter[column]!;
    conditions.push(column === lead ? `"${column}" = ANY(?::text[])` : `"${column}" = ?`);
    params.push(column === lead ? [value] : value);
  }
  if (direction === 'after') {
    conditions.push('"id" > ?');
    params.push(from ?? 0);
  } else {
    if (from !== undefined) {
      conditions.push('"id" < ?');
      params.push(from);
    }
    if (floor !== undefined) {
      conditions.push('"id" >= ?');
      params.push(floor);
    }
  }
  const where = conditions.length ? `WHERE ${conditions.join(' AND ')}` : '';
  const hint = dialect === 'sqlite' && index.length > 0 ? ` INDEXED BY "${eventIndexName(index)}"` : '';
  return {
    text: `SELECT ${EVENT_COLUMNS} FROM "Event"${hint} ${where} ORDER BY ${lead ? `"${lead}" ${order}, ` : ''}"id" ${order} LIMIT ?`,
    params: [...params, limit],
    returns: 'events',
  };
}

/**
 * A read through the ids in (low, high] (`low` excluded), whatever the filter: the conditions compare expressions
 * (`"kind" || ''`), which no index can serve, so both planners walk the primary key over the range and look at
 * `high - low` rows at most. A plain `"kind" = ?` beside the id range let SQLite walk the kind index from the range's
 * start to the end of that kind instead: unbounded again. `|| ''` keeps the comparison's meaning (NULL stays NULL).
 */
function windowStatement(filter: EventFilter, direction: Direction, low: number, high: number, limit: number): EventQuery {
  const conditions: string[] = [];
  const params: EventQuery['params'] = [];
  for (const name of FILTER_COLUMNS) {
    if (filter[name] === undefined) continue;
    conditions.push(`("${name}" || '') = ?`);
    params.push(filter[name]!);
  }
  const types = filter.types ?? [];
  if (types.length > 0) {
    conditions.push(`("type" || '') IN (${types.map(() => '?').join(', ')})`);
    params.push(...types);
  }
  conditions.unshift('"id" > ?', '"id" <= ?');
  return {
    text: `SELECT ${EVENT_COLUMNS} FROM "Event" WHERE ${conditions.join(' AND ')} ORDER BY "id" ${direction === 'after' ? 'ASC' : 'DESC'} LIMIT ?`,
    params: [low, high, ...params, limit],
    returns: 'events',
  };
}

/** The page of events with id > afterId (oldest first) that one bounded read finds. */
export function* readEventsAfter(given: EventFilter, afterId: number | undefined, limit: number, dialect: Dialect): EventRead {
  const filter = withFilterCluster(given);
  let start = afterId ?? 0;
  if (filter.since !== undefined) {
    const first = (yield sinceSeek(filter.since)) as number | null;
    if (first === null) return { events: [], scannedTo: start, more: false, scannedRows: 0 };
    start = Math.max(start, first - 1);
  }
  if (servedByIndex(filter)) {
    const events = (yield exactStatement(filter, dialect, 'after', start, undefined, limit)) as StoredEvent[];
    return { events, scannedTo: events.at(-1)?.id ?? start, more: events.length === limit, scannedRows: events.length };
  }
  // The window never passes the last id committed before it was read: one committed later lands beyond it, and the
  // next read (or the live feed, which held it) has it. PostgreSQL commits events in id order (transactionWithEvents),
  // so no smaller id can still appear once the last one is visible.
  const last = ((yield LAST_ID) as number | null) ?? 0;
  if (start >= last) return { events: [], scannedTo: start, more: false, scannedRows: 0 };
  const high = Math.min(last, start + EVENT_SCAN_WINDOW);
  const events = (yield windowStatement(filter, 'after', start, high, limit)) as StoredEvent[];
  const full = events.length === limit;
  return { events, scannedTo: full ? events.at(-1)!.id : high, more: full || high < last, scannedRows: high - start };
}

/** The page of events with id < beforeId (the newest when undefined), newest first, that one bounded read finds. */
export function* readEventsBefore(given: EventFilter, beforeId: number | undefined, limit: number, dialect: Dialect): EventRead {
  const filter = withFilterCluster(given);
  let floor: number | undefined;
  if (filter.since !== undefined) {
    const first = (yield sinceSeek(filter.since)) as number | null;
    if (first === null) return { events: [], scannedTo: beforeId ?? 0, more: false, scannedRows: 0 };
    floor = first;
    if (beforeId !== undefined && beforeId <= first) return { events: [], scannedTo: beforeId, more: false, scannedRows: 0 };
  }
  if (servedByIndex(filter)) {
    const events = (yield exactStatement(filter, dialect, 'before', beforeId, floor, limit)) as StoredEvent[];
    return { events, scannedTo: events.at(-1)?.id ?? beforeId ?? 0, more: events.length === limit, scannedRows: events.length };
  }
  const below = beforeId ?? (((yield LAST_ID) as number | null) ?? 0) + 1;
  const lowest = floor ?? 1;
  if (below <= lowest) return { events: [], scannedTo: below, more: false, scannedRows: 0 };
  const from = Math.max(lowest, below - EVENT_SCAN_WINDOW);
  const events = (yield windowStatement(filter, 'before', from - 1, below - 1, limit)) as StoredEvent[];
  const full = events.length === limit;
  return { events, scannedTo: full ? events.at(-1)!.id : from, more: full || from > lowest, scannedRows: below - from };
}
