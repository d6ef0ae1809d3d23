import { ValidationError } from '../../errors.js';

/**
 * Five-field cron schedules (`minute hour day-of-month month day-of-week`), as crontab(5) reads them: `*`, numbers,
 * ranges `a-b`, steps `*\/n` and `a-b/n`, lists `a,b`, three-letter month and weekday names, weekday 7 = Sunday; when
 * both day fields are restricted a day matches either (Vixie cron's rule). No seconds, no `@daily`, no `L`/`W`/`#`:
 * they are refused, never guessed.
 */
export interface CronSchedule {
  readonly text: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly daysOfMonth: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly weekdays: ReadonlySet<number>;
  /** Whether the day fields were `*` (crontab's either-day rule applies only when both are restricted). */
  readonly anyDayOfMonth: boolean;
  readonly anyWeekday: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldRule {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** The first name's number (JAN = 1, SUN = 0). */
  namesFrom?: number;
}

const FIELDS: readonly FieldRule[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, namesFrom: 1 },
  { name: 'day of week', min: 0, max: 7, names: WEEKDAYS, namesFrom: 0 },
];

/** Parses a five-field schedule; ValidationError naming `field` and the offending part when it is not one. */
export function parseCron(text: string, field: string): CronSchedule {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 5 || parts[0] === '') {
    throw new ValidationError(field, `"${text.slice(0, 80)}" is not a cron schedule: it needs five fields (minute hour day-of-month month day-of-week)`);
  }
  const sets = parts.map((part, i) => parseField(part, FIELDS[i]!, field, text));
  const weekdays = new Set([...sets[4]!].map((d) => (d === 7 ? 0 : d)));
  return {
    text: parts.join(' '),
    minutes: sets[0]!,
    hours: sets[1]!,
    daysOfMonth: sets[2]!,
    months: sets[3]!,
    weekdays,
    anyDayOfMonth: parts[2]!.startsWith('*'),
    anyWeekday: parts[4]!.startsWith('*'),
  };
}

/** Whether the schedule fires on a calendar date (month, day of month, weekday 0 = Sunday). */
export function cronMatchesDay(cron: CronSchedule, date: { month: number; day: number }, weekday: number): boolean {
  if (!cron.months.has(date.month)) return false;
  const dayOfMonth = cron.daysOfMonth.has(date.day);
  const dayOfWeek = cron.weekdays.has(weekday);
  if (cron.anyDayOfMonth || cron.anyWeekday) return dayOfMonth && dayOfWeek;
  return dayOfMonth || dayOfWeek;
}

function parseField(part: string, rule: FieldRule, field: string, text: string): Set<number> {
  const fail = (reason: string): never => {
    throw new ValidationError(field, `"${text.slice(0, 80)}" is not a cron schedule: ${rule.name} "${part.slice(0, 20)}" ${reason}`);
  };
  const values = new Set<number>();
  for (const item of part.split(',')) {
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined) fail('has two steps');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1 || !/^\d+$/.test(stepText ?? '1')) fail('has a step that is not a positive whole number');
    let from: number;
    let to: number;
    if (range === '*') {
      from = rule.min;
      to = rule.max;
    } else {
      const [low, high, more] = (range ?? '').split('-');
      if (more !== undefined) fail('is not a range a-b');
      from = fieldValue(low ?? '', rule, fail);
      to = high === undefined ? (stepText === undefined ? from : rule.max) : fieldValue(high, rule, fail);
      if (to < from) fail(`runs backwards (${from}-${to})`);
    }
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return values;
}

function fieldValue(text: string, rule: FieldRule, fail: (reason: string) => never): number {
  const named = rule.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return named + (rule.namesFrom ?? 0);
  if (!/^\d{1,2}$/.test(text)) fail('is not a number or a name');
  const value = Number(text);
  if (value < rule.min || value > rule.max) fail(`is outside ${rule.min}-${rule.max}`);
  return value;
}
