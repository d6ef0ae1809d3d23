/**
 * Argo's `spec.dryRun[].metricName` is a regular expression. Evaluated by a backtracking engine (JavaScript's), a
 * pattern such as `^(a|aa)+$` takes exponential time: a viewer's dry-run bump with one froze the whole service for
 * 150 s, and a launched rollout re-ran it on every measurement and read (attack 19, F1). Metric names are short and
 * the patterns people write are names and wildcards (`.*`, `error-.*`), so rollplane takes the part of the syntax that
 * can be matched in time linear in the pattern and quadratic in the (≤ 63-character) name, and refuses the rest at
 * submit with what it takes:
 * - literal characters, `\` before a punctuation character, `\d`, `\w`, `.`, classes `[a-z0-9_-]` and `[^…]`;
 * - `*`, `+` or `?` after one of those;
 * - `|` between whole alternatives, `^` and `$` at their ends (every alternative must match the whole name anyway).
 * No groups and no `{n,m}`.
 */

type Atom = { any: true } | { chars: (c: string) => boolean };
interface Piece {
  atom: Atom;
  /** At least one (`+`, or no quantifier) or none allowed (`*`, `?`). */
  optional: boolean;
  /** More than one allowed (`*`, `+`). */
  many: boolean;
}

export interface NamePattern {
  test(name: string): boolean;
}

/** The pattern, or what is wrong with it (a sentence for the user). */
export function compileNamePattern(pattern: string): NamePattern | string {
  const branches: Piece[][] = [];
  for (const raw of pattern.split('|')) {
    const branch = parseBranch(raw);
    if (typeof branch === 'string') return branch;
    branches.push(branch);
  }
  return { test: (name) => branches.some((pieces) => matches(pieces, name)) };
}

const SUPPORTED =
  'takes literal characters, ".", "\\d", "\\w", classes such as [a-z0-9_-], "*", "+" or "?" after one of them, and "|" between whole alternatives (no groups or {n,m}: they could take exponential time)';

function parseBranch(source: string): Piece[] | string {
  let text = source;
  if (text.startsWith('^')) text = text.slice(1);
  if (text.endsWith('$') && !text.endsWith('\\$')) text = text.slice(0, -1);
  const pieces: Piece[] = [];
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    let atom: Atom;
    if (c === '.') {
      atom = { any: true };
      i++;
    } else if (c === '\\') {
      const next = text[i + 1];
      if (next === undefined) return `ends with "\\"; it ${SUPPORTED}`;
      if (next === 'd') atom = { chars: (x) => x >= '0' && x <= '9' };
      else if (next === 'w') atom = { chars: (x) => /^[A-Za-z0-9_]$/.test(x) };
      else if (/[A-Za-z0-9]/.test(next)) return `"\\${next}" is not supported; it ${SUPPORTED}`;
      else atom = { chars: (x) => x === next };
      i += 2;
    } else if (c === '[') {
      const end = text.indexOf(']', i + 2);
      if (end < 0) return `a "[" is not closed; it ${SUPPORTED}`;
      const klass = parseClass(text.slice(i + 1, end));
      if (typeof klass === 'string') return klass;
      atom = { chars: klass };
      i = end + 1;
    } else if ('()[]{}*+?^$|'.includes(c)) {
      return `"${c}" at ${i} is not supported there; it ${SUPPORTED}`;
    } else {
      atom = { chars: (x) => x === c };
      i++;
    }
    const quantifier = text[i];
    if (quantifier === '*' || quantifier === '+' || quantifier === '?') {
      pieces.push({ atom, optional: quantifier !== '+', many: quantifier !== '?' });
      i++;
      if (text[i] !== undefined && '*+?{'.includes(text[i]!)) return `a quantifier after a quantifier is not supported; it ${SUPPORTED}`;
    } else if (quantifier === '{') {
      return `"{n,m}" is not supported; it ${SUPPORTED}`;
    } else pieces.push({ atom, optional: false, many: false });
  }
  return pieces;
}

/** The inside of `[…]`: characters, ranges `a-z`, `\d`, `\w`, escaped punctuation; `^` first negates. */
function parseClass(inside: string): ((c: string) => boolean) | string {
  const negate = inside.startsWith('^');
  const body = negate ? inside.slice(1) : inside;
  const tests: ((c: string) => boolean)[] = [];
  for (let i = 0; i < body.length; i++) {
    let c = body[i]!;
    if (c === '\\') {
      const next = body[++i];
      if (next === undefined) return `a class ends with "\\"; it ${SUPPORTED}`;
      if (next === 'd') {
        tests.push((x) => x >= '0' && x <= '9');
        continue;
      }
      if (next === 'w') {
        tests.push((x) => /^[A-Za-z0-9_]$/.test(x));
        continue;
      }
      c = next;
    } else if (c === '[') return `"[" inside a class is not supported; it ${SUPPORTED}`;
    if (body[i + 1] === '-' && i + 2 < body.length) {
      const to = body[i + 2]!;
      if (to < c) return `the range "${c}-${to}" is backwards`;
      tests.push((x) => x >= c && x <= to);
      i += 2;
    } else {
      const literal = c;
      tests.push((x) => x === literal);
    }
  }
  return (x) => tests.some((t) => t(x)) !== negate;
}

/** Whether `pieces` match all of `name`: the set of positions reachable after each piece (no backtracking). */
function matches(pieces: readonly Piece[], name: string): boolean {
  let reachable = new Array<boolean>(name.length + 1).fill(false);
  reachable[0] = true;
  for (const piece of pieces) {
    const next = new Array<boolean>(name.length + 1).fill(false);
    for (let at = 0; at <= name.length; at++) {
      if (!reachable[at]) continue;
      if (piece.optional) next[at] = true;
      for (let end = at; end < name.length && fits(piece.atom, name[end]!); end++) {
        next[end + 1] = true;
        if (!piece.many) break;
      }
    }
    reachable = next;
  }
  return reachable[name.length] === true;
}

function fits(atom: Atom, c: string): boolean {
  return 'any' in atom || atom.chars(c);
}
