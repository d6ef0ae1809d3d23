import { ValidationError } from '../errors.js';
import { isLabelKey, isLabelValue, namesProblem } from '../util/dnsNames.js';

/** Kubernetes label selectors (`a=b,c!=d,e in (x,y),f notin (z),g,!h`), parsed strictly and matched against labels. */
export type Requirement =
  | { op: 'eq' | 'neq'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'exists' | 'notexists'; key: string };

/** Characters that end a key or a value (Kubernetes' selector lexer splits on the same). */
const DELIMITERS = new Set([' ', '\t', '\n', '\r', ',', '(', ')', '=', '!', '<', '>']);

/**
 * Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h` (Kubernetes' label selector syntax, without the numeric `<`/`>`);
 * ValidationError naming `field` when malformed, whose message and `details.position` say where (0-based character).
 */
export function parseLabelSelector(text: string, field: string): Requirement[] {
  const fail = (reason: string, position: number): never => {
    throw new ValidationError(field, `"${text.slice(0, 80)}" is not a label selector: ${reason} (at position ${position})`, { details: { position } });
  };
  if (text.length > 1000) fail('longer than 1000 characters', 1000);
  let pos = 0;
  const skipSpace = () => {
    while (pos < text.length && /\s/.test(text[pos]!)) pos++;
  };
  const word = (): { text: string; at: number } => {
    const at = pos;
    while (pos < text.length && !DELIMITERS.has(text[pos]!)) pos++;
    return { text: text.slice(at, pos), at };
  };
  const checked = (check: (s: string) => readonly string[], what: string) => (w: { text: string; at: number }) => {
    const problem = namesProblem(check(w.text));
    return problem ? fail(`"${w.text}" is not a valid label ${what}: ${problem}`, w.at) : w.text;
  };
  const key = checked(isLabelKey, 'key');
  const value = checked(isLabelValue, 'value');
  const requireKey = () => {
    skipSpace();
    const w = word();
    if (w.text === '') fail(pos >= text.length || text[pos] === ',' ? 'empty requirement' : `expected a label key, found "${text[pos]}"`, w.at);
    return key(w);
  };
  const requirements: Requirement[] = [];
  for (;;) {
    skipSpace();
    let requirement: Requirement;
    if (text[pos] === '!') {
      pos++;
      requirement = { op: 'notexists', key: requireKey() };
    } else {
      const k = requireKey();
      skipSpace();
      const opAt = pos;
      if (text.startsWith('!=', pos) || text.startsWith('==', pos) || text[pos] === '=') {
        const op = text[pos] === '!' ? 'neq' : 'eq';
        pos += text.startsWith('=', pos) && !text.startsWith('==', pos) ? 1 : 2;
        skipSpace();
        requirement = { op, key: k, value: value(word()) };
      } else if (pos >= text.length || text[pos] === ',') {
        requirement = { op: 'exists', key: k };
      } else {
        const op = word().text;
        if (op !== 'in' && op !== 'notin') fail('expected =, ==, !=, in, notin, "," or the end', opAt);
        skipSpace();
        if (text[pos] !== '(') fail(`expected "(" after ${op}`, pos);
        pos++;
        skipSpace();
        // As Kubernetes: `in ()` selects nothing and `notin ()` everything, which no one means.
        if (text[pos] === ')') fail(`the values of ${op} cannot be empty`, pos);
        const values: string[] = [];
        for (;;) {
          skipSpace();
          values.push(value(word()));
          skipSpace();
          if (text[pos] === ',') pos++;
          else if (text[pos] === ')') break;
          else fail('expected "," or ")" in the list of values', pos);
        }
        pos++;
        requirement = { op: op as 'in' | 'notin', key: k, values };
      }
    }
    requirements.push(requirement);
    skipSpace();
    if (pos >= text.length) return requirements;
    if (text[pos] !== ',') fail('expected "," or the end', pos);
    pos++;
  }
}

export function matchesLabelSelector(requirements: readonly Requirement[], labels: Record<string, string>): boolean {
  return requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    switch (r.op) {
      case 'eq':
        return has && labels[r.key] === r.value;
      case 'neq':
        return !has || labels[r.key] !== r.value;
      case 'in':
        return has && r.values.includes(labels[r.key]!);
      case 'notin':
        return !has || !r.values.includes(labels[r.key]!);
      case 'exists':
        return has;
      case 'notexists':
        return !has;
      default: {
        const never: never = r;
        throw new TypeError(`unknown requirement ${JSON.stringify(never)}`);
      }
    }
  });
}
