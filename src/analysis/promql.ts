/**
 * A small syntax check of a PromQL query at submit time (ADR 0061): strings closed, brackets balanced and of the right
 * kind, label matchers well formed, range and subquery durations valid, and no stray characters. It is no PromQL
 * parser: a query it passes can still be refused by Prometheus, which is the judge at measurement time (that
 * measurement is then an Error with Prometheus's message). Asking Prometheus at submit time instead would make
 * submitting depend on a reachable Prometheus, and 2.42 (Debian's) has no parse endpoint.
 *
 * `{{args.name}}` placeholders are checked against the declared arguments by the caller and read here as a value.
 */
import { ValidationError } from '../errors.js';

export const MAX_QUERY_LENGTH = 16 * 1024;

const PLACEHOLDER = /\{\{\s*args\.[A-Za-z0-9_-]+\s*\}\}/g;
const DURATION = /^(?:\d+(?:ms|[smhdwy]))+$/;

/** Throws a ValidationError naming `field` when the query cannot be PromQL. */
export function checkPromQL(query: string, field: string): void {
  if (query.trim() === '') throw new ValidationError(field, 'is empty');
  if (query.length > MAX_QUERY_LENGTH) throw new ValidationError(field, `is longer than ${MAX_QUERY_LENGTH} characters`);
  // A placeholder stands for a value: inside a string it is text, elsewhere a number or a name.
  const text = query.replace(PLACEHOLDER, (match) => 'x'.repeat(match.length));
  const stack: { open: string; at: number }[] = [];
  let sawValue = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '#') {
      // A comment runs to the end of the line.
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      const end = stringEnd(text, i);
      if (end < 0) throw new ValidationError(field, `the string opened at ${i + 1} is not closed`);
      i = end + 1;
      sawValue = true;
      continue;
    }
    if (c === '[') {
      // A range or subquery: read whole, up to its `]`.
      const close = text.indexOf(']', i);
      if (close < 0) throw new ValidationError(field, `the range opened at ${i + 1} is not closed`);
      checkRange(text.slice(i + 1, close), field, i);
      i = close + 1;
      continue;
    }
    if (c === '{') {
      // Label matchers: read whole, up to the `}` outside their strings.
      const close = matchersEnd(text, i);
      if (close < 0) throw new ValidationError(field, `the label matchers opened at ${i + 1} are not closed`);
      checkMatchers(text.slice(i + 1, close), field, i);
      i = close + 1;
      sawValue = true;
      continue;
    }
    if (c === '(') {
      stack.push({ open: c, at: i });
      i++;
      continue;
    }
    if (c === ')' || c === ']' || c === '}') {
      const top = stack.pop();
      if (!top || c !== ')')
        throw new ValidationError(
          field,
          `${JSON.stringify(c)} at ${i + 1} closes nothing${top ? ` (${JSON.stringify(top.open)} at ${top.at + 1} is open)` : ''}`,
        );
      i++;
      continue;
    }
    if (/[A-Za-z0-9_:.\s+\-*/%^=!<>,@]/.test(c)) {
      if (/[A-Za-z0-9_:.]/.test(c)) sawValue = true;
      i++;
      continue;
    }
    throw new ValidationError(field, `unexpected ${JSON.stringify(c)} at ${i + 1}`);
  }
  const open = stack.pop();
  if (open) throw new ValidationError(field, `${JSON.stringify(open.open)} at ${open.at + 1} is not closed`);
  if (!sawValue) throw new ValidationError(field, 'names no metric, function or number');
}

/** Index of the quote closing the string opened at `start`, or -1. Backquoted strings have no escapes. */
function stringEnd(text: string, start: number): number {
  const quote = text[start]!;
  for (let i = start + 1; i < text.length; i++) {
    if (quote !== '`' && text[i] === '\\') {
      i++;
      continue;
    }
    if (text[i] === quote) return i;
    if (text[i] === '\n' && quote !== '`') return -1;
  }
  return -1;
}

/** The `}` closing the matchers opened at `start` (skipping strings), or -1. */
function matchersEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'" || c === '`') {
      const end = stringEnd(text, i);
      if (end < 0) return -1;
      i = end;
      continue;
    }
    if (c === '}') return i;
  }
  return -1;
}

/** `name op "value"` separated by commas (a trailing comma allowed), or a bare quoted metric name. */
function checkMatchers(body: string, field: string, at: number): void {
  let rest = body.trim();
  while (rest !== '') {
    const matcher = /^(?:[A-Za-z_][A-Za-z0-9_]*\s*(?:=~|!~|!=|=)\s*|)("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)\s*(,\s*)?/.exec(rest);
    if (!matcher)
      throw new ValidationError(
        field,
        `the label matchers at ${at + 1} are not \`name="value"\`, \`name!="value"\`, \`name=~"regex"\` or \`name!~"regex"\`: ${JSON.stringify(rest.slice(0, 40))}`,
      );
    rest = rest.slice(matcher[0].length);
    if (rest !== '' && !matcher[2]) throw new ValidationError(field, `the label matchers at ${at + 1} need a comma between two matchers`);
  }
}

/** `[5m]`, `[1h30m]`, or a subquery `[30m:1m]` / `[30m:]`. */
function checkRange(body: string, field: string, at: number): void {
  const [range, step, ...more] = body.split(':').map((part) => part.trim());
  const ok = more.length === 0 && DURATION.test(range ?? '') && (step === undefined || step === '' || DURATION.test(step));
  if (!ok) throw new ValidationError(field, `the range at ${at + 1} is not a duration like [5m], [1h30m] or a subquery [30m:1m]: [${body}]`);
}
