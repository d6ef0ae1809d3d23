import { ValidationError } from '../../errors.js';
import { isDns1123Label, namesProblem } from '../../util/dnsNames.js';
import { addDays, instantsOf, isTimeZone, type LocalTime, localTimeAt, weekdayOf } from '../../util/zonedTime.js';
import { matchesLabelSelector, parseLabelSelector, type Requirement } from '../labelSelector.js';
import { type CronSchedule, cronMatchesDay, parseCron } from './cron.js';

/**
 * Maintenance windows (issue 30): named policies that allow or deny changes to the clusters their label selector
 * picks, on wall clocks in an IANA time zone. A cluster may take a new change at an instant when no DENY policy that
 * applies to it is active, and — if any ALLOW policy applies to it — one of those is active (deny overrides allow, as
 * Argo CD's sync windows; no ALLOW policy means no restriction). Windows gate *admission* only: a change already made
 * finishes (what the engine does with this answer).
 *
 * Membership is read off the wall clock: an instant is inside a weekly window when the zone's clock shows one of its
 * days and a time in [start, end) (end ≤ start crosses midnight into the next day). So across daylight saving a
 * window is exactly as the clock on the wall says: 02:00–03:00 never opens on the night the clock jumps from 02:00 to
 * 03:00, and lasts two hours on the night it goes back. A cron window opens at each instant the clock shows a time the
 * schedule names (a time the clock skips does not fire; one it shows twice fires at its first showing) and stays open
 * for its duration of elapsed time. A range is two instants (a local date-time in the policy's zone, or with an offset).
 */
export type WindowKind = 'ALLOW' | 'DENY';

/** A policy as the API and the CLI take it. */
export interface WindowPolicyInput {
  name: string;
  kind: WindowKind;
  /** IANA name (`Europe/Berlin`); default `UTC`. */
  timeZone?: string | null;
  /** Which clusters it applies to (Kubernetes label selector); every cluster when empty. */
  clusterSelector?: string | null;
  /** Days (`MON`…`SUN`) and a start and end `HH:MM`; end ≤ start crosses midnight. */
  weekly?: readonly { days: readonly string[]; start: string; end: string }[] | null;
  /** A five-field cron schedule and how long each opening lasts (`90m`, `4h`, `1d12h`). */
  cron?: readonly { schedule: string; duration: string }[] | null;
  /** One-off date ranges (`2026-12-24T00:00` in the zone, or with `Z`/an offset); a freeze is a DENY range. */
  ranges?: readonly { from: string; to: string }[] | null;
}

type Schedule =
  | { type: 'weekly'; days: ReadonlySet<number>; start: number; end: number }
  | { type: 'cron'; cron: CronSchedule; durationMs: number }
  | { type: 'range'; from: number; to: number };

/** A checked policy (parseWindowPolicies). */
export interface WindowPolicy {
  readonly name: string;
  readonly kind: WindowKind;
  readonly timeZone: string;
  readonly selector: readonly Requirement[];
  readonly schedules: readonly Schedule[];
}

/** Whether a cluster may take a new change now, why, and until when that holds. */
export interface WindowDecision {
  open: boolean;
  /** For people: which policy opened or closed it ("no window policy applies" when none). */
  reason: string;
  /** The policy that decided (the active DENY, the active ALLOW, or null). */
  policy: string | null;
  /** The next instant the answer changes, within the horizon; null when it does not. */
  until: Date | null;
}

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
/** Longest cron opening: a window that lasts longer is a weekly window or a range. */
const MAX_DURATION_MS = 31 * DAY_MS;
/** How far ahead `decide` looks for the next change (a yearly freeze is still found). */
export const DEFAULT_HORIZON_MS = 400 * DAY_MS;
const MAX_POLICIES = 200;
const MAX_SCHEDULES = 100;

/** Checks policies given by a user; ValidationError with the path of the first bad field. Names must be unique. */
export function parseWindowPolicies(inputs: readonly WindowPolicyInput[], field = 'input.windows'): WindowPolicy[] {
  if (inputs.length > MAX_POLICIES) throw new ValidationError(field, `at most ${MAX_POLICIES} window policies`);
  const names = new Set<string>();
  return inputs.map((input, i) => {
    const policy = parseWindowPolicy(input, `${field}[${i}]`);
    if (names.has(policy.name)) throw new ValidationError(`${field}[${i}].name`, `"${policy.name}" is used by an earlier policy`);
    names.add(policy.name);
    return policy;
  });
}

export function parseWindowPolicy(input: WindowPolicyInput, field: string): WindowPolicy {
  const nameProblem = namesProblem(isDns1123Label(String(input.name ?? '')));
  if (nameProblem) throw new ValidationError(`${field}.name`, nameProblem);
  if (input.kind !== 'ALLOW' && input.kind !== 'DENY') throw new ValidationError(`${field}.kind`, 'must be ALLOW or DENY');
  const timeZone = input.timeZone?.trim() || 'UTC';
  if (!isTimeZone(timeZone)) throw new ValidationError(`${field}.timeZone`, `"${timeZone.slice(0, 60)}" is not an IANA time zone (e.g. Europe/Berlin)`);
  const selector = input.clusterSelector?.trim() ? parseLabelSelector(input.clusterSelector, `${field}.clusterSelector`) : [];
  const schedules: Schedule[] = [
    ...(input.weekly ?? []).map((w, i) => weekly(w, `${field}.weekly[${i}]`)),
    ...(input.cron ?? []).map((c, i) => cronWindow(c, `${field}.cron[${i}]`)),
    ...(input.ranges ?? []).map((r, i) => range(r, timeZone, `${field}.ranges[${i}]`)),
  ];
  if (schedules.length === 0) throw new ValidationError(field, 'names no window: give weekly, cron or ranges');
  if (schedules.length > MAX_SCHEDULES) throw new ValidationError(field, `at most ${MAX_SCHEDULES} windows in one policy`);
  return { name: input.name, kind: input.kind, timeZone, selector, schedules };
}

function weekly(input: { days: readonly string[]; start: string; end: string }, field: string): Schedule {
  if (!input.days?.length) throw new ValidationError(`${field}.days`, 'names no day (MON…SUN)');
  const days = new Set(
    input.days.map((day, i) => {
      const index = DAY_NAMES.indexOf(String(day).toUpperCase());
      if (index < 0) throw new ValidationError(`${field}.days[${i}]`, `"${String(day).slice(0, 20)}" is not a day (MON, TUE, WED, THU, FRI, SAT, SUN)`);
      return index;
    }),
  );
  const start = minuteOfDay(input.start, `${field}.start`);
  const end = minuteOfDay(input.end, `${field}.end`, true);
  if (start === end) throw new ValidationError(`${field}.end`, 'equals start: a window of no time (use 00:00–24:00 for a whole day)');
  return { type: 'weekly', days, start, end };
}

function minuteOfDay(text: string, field: string, allow24 = false): number {
  const match = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(text ?? '');
  const minutes = match ? Number(match[1]) * 60 + Number(match[2]) : -1;
  if (minutes < 0 || minutes > 24 * 60 || (minutes === 24 * 60 && !allow24)) {
    throw new ValidationError(field, `"${String(text).slice(0, 20)}" is not a time HH:MM${allow24 ? ' (24:00 ends a day)' : ''}`);
  }
  return minutes;
}

function cronWindow(input: { schedule: string; duration: string }, field: string): Schedule {
  const cron = parseCron(input.schedule ?? '', `${field}.schedule`);
  const durationMs = parseDuration(input.duration, `${field}.duration`);
  return { type: 'cron', cron, durationMs };
}

/** `1d12h30m`-style durations (days, hours, minutes; at least one), above zero and at most 31 days. */
export function parseDuration(text: string, field: string): number {
  const match = /^(?:(\d{1,3})d)?(?:(\d{1,4})h)?(?:(\d{1,6})m)?$/.exec(text ?? '');
  const ms = match && text !== '' ? (Number(match[1] ?? 0) * 24 * 60 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0)) * MINUTE_MS : 0;
  if (ms <= 0 || ms > MAX_DURATION_MS)
    throw new ValidationError(field, `"${String(text).slice(0, 20)}" is not a duration above 0 and at most 31d (e.g. 90m, 4h, 1d12h)`);
  return ms;
}

function range(input: { from: string; to: string }, timeZone: string, field: string): Schedule {
  const from = instantOf(input.from, timeZone, `${field}.from`);
  const to = instantOf(input.to, timeZone, `${field}.to`);
  if (to <= from) throw new ValidationError(`${field}.to`, 'is not after from');
  return { type: 'range', from, to };
}

/** `2026-12-24T18:00` read on the zone's clock (its first showing; inside a jump, the jump), or an ISO instant with an offset. */
function instantOf(text: string, timeZone: string, field: string): number {
  const local = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(text ?? '');
  if (local) {
    const date = { year: Number(local[1]), month: Number(local[2]), day: Number(local[3]) };
    const minutes = Number(local[4]) * 60 + Number(local[5]);
    const check = new Date(Date.UTC(date.year, date.month - 1, date.day));
    if (check.getUTCMonth() + 1 === date.month && check.getUTCDate() === date.day && minutes < 24 * 60) {
      return instantsOf(date, minutes, timeZone, 'after')[0]!;
    }
  } else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text ?? '')) {
    const instant = Date.parse(text);
    if (!Number.isNaN(instant)) return instant;
  }
  throw new ValidationError(field, `"${String(text).slice(0, 40)}" is not a date-time (2026-12-24T18:00 on the policy's clock, or with Z or an offset)`);
}

/** The policies that apply to a cluster with these labels. */
export function policiesFor(policies: readonly WindowPolicy[], labels: Record<string, string>): WindowPolicy[] {
  return policies.filter((p) => matchesLabelSelector([...p.selector], labels));
}

/**
 * Whether a cluster (its labels) may take a new change at `at`, why, and until when: the answer changes at the first
 * window boundary within `horizonMs` where it differs (null when none does).
 */
export function decide(policies: readonly WindowPolicy[], labels: Record<string, string>, at: Date, horizonMs = DEFAULT_HORIZON_MS): WindowDecision {
  const applying = policiesFor(policies, labels);
  const now = at.getTime();
  const current = decideAt(applying, now);
  if (applying.length === 0) return { ...current, until: null };
  // Boundaries a week at a time, so that a window that changes tomorrow is found without enumerating a year.
  for (let from = now; from < now + horizonMs; from += 7 * DAY_MS) {
    const to = Math.min(from + 7 * DAY_MS, now + horizonMs);
    for (const boundary of boundaries(applying, from, to)) {
      if (boundary <= now || boundary > to) continue;
      if (decideAt(applying, boundary).open !== current.open) return { ...current, until: new Date(boundary) };
    }
  }
  return { ...current, until: null };
}

function decideAt(applying: readonly WindowPolicy[], at: number): Omit<WindowDecision, 'until'> {
  const deny = applying.find((p) => p.kind === 'DENY' && isActive(p, at));
  if (deny) return { open: false, reason: `inside DENY window policy "${deny.name}"`, policy: deny.name };
  const allows = applying.filter((p) => p.kind === 'ALLOW');
  if (allows.length === 0) {
    return { open: true, reason: applying.length === 0 ? 'no window policy applies' : 'no DENY window policy is active', policy: null };
  }
  const allow = allows.find((p) => isActive(p, at));
  if (allow) return { open: true, reason: `inside ALLOW window policy "${allow.name}"`, policy: allow.name };
  return { open: false, reason: `outside every ALLOW window (${allows.map((p) => `"${p.name}"`).join(', ')})`, policy: null };
}

/** Whether one of the policy's windows contains the instant. */
export function isActive(policy: WindowPolicy, at: number): boolean {
  const local = localTimeAt(at, policy.timeZone);
  return policy.schedules.some((schedule) => {
    switch (schedule.type) {
      case 'weekly':
        return inWeekly(schedule, local);
      case 'range':
        return schedule.from <= at && at < schedule.to;
      default:
        return cronStarts(schedule, policy.timeZone, at - schedule.durationMs, at).some((start) => start <= at && at < start + schedule.durationMs);
    }
  });
}

function inWeekly(window: { days: ReadonlySet<number>; start: number; end: number }, local: LocalTime): boolean {
  if (window.start < window.end) return window.days.has(local.weekday) && local.minuteOfDay >= window.start && local.minuteOfDay < window.end;
  const yesterday = (local.weekday + 6) % 7;
  return (window.days.has(local.weekday) && local.minuteOfDay >= window.start) || (window.days.has(yesterday) && local.minuteOfDay < window.end);
}

/** Every instant in [from, to] at which one of the policies' windows may open or close (a superset is fine). */
function boundaries(policies: readonly WindowPolicy[], from: number, to: number): number[] {
  const found = new Set<number>();
  for (const policy of policies) {
    for (const schedule of policy.schedules) {
      if (schedule.type === 'range') {
        found.add(schedule.from);
        found.add(schedule.to);
      } else if (schedule.type === 'cron') {
        for (const start of cronStarts(schedule, policy.timeZone, from - schedule.durationMs, to)) {
          found.add(start);
          found.add(start + schedule.durationMs);
        }
      } else {
        for (const date of datesAround(from, to, policy.timeZone)) {
          // Inside a jump the clock passes the time at the jump itself; both showings of a time the clock repeats.
          for (const minute of [schedule.start, schedule.end % (24 * 60)]) {
            for (const instant of instantsOf(date, minute, policy.timeZone, 'after')) found.add(instant);
          }
        }
      }
    }
  }
  return [...found].filter((b) => b >= from && b <= to).sort((a, b) => a - b);
}

/** The zone's calendar dates from the day before `from` to the day after `to`. */
function datesAround(from: number, to: number, timeZone: string): { year: number; month: number; day: number }[] {
  const first = addDays(localTimeAt(from, timeZone), -1);
  const last = addDays(localTimeAt(to, timeZone), 1);
  const dates = [];
  for (let date = first; Date.UTC(date.year, date.month - 1, date.day) <= Date.UTC(last.year, last.month - 1, last.day); date = addDays(date, 1)) {
    dates.push(date);
  }
  return dates;
}

/** The cron schedule's opening instants in [from, to] on the zone's clock: skipped times do not fire, repeated ones once. */
function cronStarts(schedule: { cron: CronSchedule }, timeZone: string, from: number, to: number): number[] {
  const starts: number[] = [];
  for (const date of datesAround(from, to, timeZone)) {
    if (!cronMatchesDay(schedule.cron, date, weekdayOf(date))) continue;
    for (const hour of schedule.cron.hours) {
      for (const minute of schedule.cron.minutes) {
        const instant = instantsOf(date, hour * 60 + minute, timeZone)[0];
        if (instant !== undefined && instant >= from && instant <= to) starts.push(instant);
      }
    }
  }
  return starts;
}
