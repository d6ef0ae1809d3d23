/**
 * Wall-clock time in an IANA time zone, with the platform's own tz database (Node's full ICU) and no library: what a
 * local clock in that zone shows at an instant, and the instants at which it shows a given local time — none inside a
 * daylight-saving gap, two inside an overlap. Maintenance windows are defined on wall clocks (src/domain/gates).
 */

/** A wall-clock reading: calendar date, time of day (minutes since midnight) and weekday (0 = Sunday). */
export interface LocalTime {
  year: number;
  month: number;
  day: number;
  minuteOfDay: number;
  weekday: number;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };
const formatters = new Map<string, Intl.DateTimeFormat>();

/** Whether the platform knows the zone (an IANA name such as `Europe/Berlin`, or `UTC`). */
export function isTimeZone(zone: string): boolean {
  try {
    formatterOf(zone);
    return true;
  } catch {
    return false;
  }
}

function formatterOf(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** What a clock in `zone` shows at `instant` (to the minute). */
export function localTimeAt(instant: number, zone: string): LocalTime {
  const fields: Record<string, string> = {};
  for (const part of formatterOf(zone).formatToParts(new Date(instant))) fields[part.type] = part.value;
  return {
    year: Number(fields.year),
    month: Number(fields.month),
    day: Number(fields.day),
    minuteOfDay: Number(fields.hour) * 60 + Number(fields.minute),
    weekday: WEEKDAYS[fields.weekday!]!,
  };
}

/** The zone's offset from UTC at `instant`, in milliseconds (to the minute). */
function offsetAt(instant: number, zone: string): number {
  const local = localTimeAt(instant, zone);
  const asUtc = Date.UTC(local.year, local.month - 1, local.day) + local.minuteOfDay * MINUTE_MS;
  return asUtc - Math.floor(instant / MINUTE_MS) * MINUTE_MS;
}

/**
 * The instants at which a clock in `zone` shows `minuteOfDay` on the given date, earliest first: one on most days, two
 * when the clock goes back over it, none when it jumps over it. With `gap: 'after'`, a time inside a jump gives the
 * instant of the jump (the first instant the clock shows a later time), which is where a wall-clock interval starting
 * inside the gap begins.
 */
export function instantsOf(date: { year: number; month: number; day: number }, minuteOfDay: number, zone: string, gap: 'none' | 'after' = 'none'): number[] {
  const asUtc = Date.UTC(date.year, date.month - 1, date.day) + minuteOfDay * MINUTE_MS;
  // No zone changes its offset twice within 30 hours: the offsets either side cover every reading of that wall time.
  const before = offsetAt(asUtc - 15 * HOUR_MS, zone);
  const after = offsetAt(asUtc + 15 * HOUR_MS, zone);
  const candidates = [...new Set([asUtc - before, asUtc - after])].sort((a, b) => a - b);
  const matching = candidates.filter((instant) => {
    const local = localTimeAt(instant, zone);
    return local.year === date.year && local.month === date.month && local.day === date.day && local.minuteOfDay === minuteOfDay;
  });
  if (matching.length > 0 || gap === 'none') return matching;
  return [jumpBetween(candidates[0]!, candidates[candidates.length - 1]!, zone)];
}

/** The first minute at which the zone's offset differs from its offset at `from` (binary search, `from` < `to`). */
function jumpBetween(from: number, to: number, zone: string): number {
  const start = offsetAt(from, zone);
  let low = Math.floor(from / MINUTE_MS);
  let high = Math.ceil(to / MINUTE_MS);
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (offsetAt(middle * MINUTE_MS, zone) === start) low = middle;
    else high = middle;
  }
  return high * MINUTE_MS;
}

/** The calendar date `days` after the given one (proleptic Gregorian, no zone involved). */
export function addDays(date: { year: number; month: number; day: number }, days: number): { year: number; month: number; day: number } {
  const moved = new Date(Date.UTC(date.year, date.month - 1, date.day + days));
  return { year: moved.getUTCFullYear(), month: moved.getUTCMonth() + 1, day: moved.getUTCDate() };
}

/** The weekday (0 = Sunday) of a calendar date. */
export function weekdayOf(date: { year: number; month: number; day: number }): number {
  return new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay();
}
