import { ValidationError } from '../errors.js';
import { isLabelKey, isLabelValue, namesProblem } from '../util/dnsNames.js';

/** Kubernetes label selectors (`a=b,c!=d,e in (x,y),f notin (z),g,!h`), parsed strictly and matched against labels. */
export type Requirement =
  | { op: 'eq' | 'neq'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'exists' | 'notexists'; key: string };

/** Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h`; ValidationError naming `field` when malformed. */
export function parseLabelSelector(text: string, field: string): Requirement[] {
  const fail = (reason: string): never => {
    throw new ValidationError(field, `"${text.slice(0, 80)}" is not a label selector: ${reason}`);
  };
  if (text.length > 1000) fail('longer than 1000 characters');
  // Split on commas outside parentheses.
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (depth < 0) fail('unbalanced parentheses');
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  if (depth !== 0) fail('unbalanced parentheses');
  parts.push(current);
  const checked =
    (check: (s: string) => readonly string[], what: string) =>
    (s: string): string => {
      const problem = namesProblem(check(s));
      return problem ? fail(`"${s}" is not a valid label ${what}: ${problem}`) : s;
    };
  const key = checked(isLabelKey, 'key');
  const value = checked(isLabelValue, 'value');
  return parts.map((raw): Requirement => {
    const part = raw.trim();
    if (part === '') fail('empty requirement');
    let m = /^(\S+?)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    if (m) return { op: m[2] as 'in' | 'notin', key: key(m[1]!), values: m[3]!.split(',').map((v) => value(v.trim())) };
    m = /^(.+?)\s*(!=|==|=)\s*(.*)$/.exec(part);
    if (m) return { op: m[2] === '!=' ? 'neq' : 'eq', key: key(m[1]!.trim()), value: value(m[3]!.trim()) };
    if (part.startsWith('!')) return { op: 'notexists', key: key(part.slice(1).trim()) };
    return { op: 'exists', key: key(part) };
  });
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
