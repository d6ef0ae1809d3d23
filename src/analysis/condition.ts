/**
 * The conditions of an analysis metric (`successCondition`, `failureCondition`): the subset of Argo Rollouts' expression
 * language (expr) that Prometheus templates use in practice, parsed into a tree and evaluated by walking it — never
 * `eval` or `Function`, so a template can compute nothing but a verdict.
 *
 * Grammar (precedence low → high):
 *   or      := and (("||" | "or") and)*
 *   and     := not (("&&" | "and") not)*
 *   compare := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)?
 *   sum     := product (("+" | "-") product)*
 *   product := unary (("*" | "/" | "%") unary)*
 *   unary   := ("!" | "not" | "-") unary | postfix
 *   postfix := primary ("[" integer "]")?
 *   primary := number | "true" | "false" | "result" | call | "(" or ")"
 *   call    := ("len" | "isNaN" | "isInf" | "abs" | "asFloat" | "asInt") "(" or ")"
 * `result` is the measurement: a number for a scalar query, a list of numbers for a vector (one per series).
 *
 * NaN never compares as a number: a comparison with NaN on either side does not answer true or false but raises
 * NoDataSignal, and the measurement is then decided by the metric's noData policy (ADR 0061). `isNaN(x)` is how a
 * condition looks at NaN itself; `isNaN(result[0]) || result[0] < 0.05` never compares NaN, as `||` stops early.
 *
 * Indexing `result[i]` must be guarded by the length: an empty vector never reaches a condition (it is no data), so
 * `result[0]` is always safe, but `result[1]` needs `len(result) > 1 && …` (or `>= 2`, `== n` with n > 1) on its left.
 */
import { ValidationError } from '../errors.js';

export type Node =
  | { type: 'number'; value: number }
  | { type: 'boolean'; value: boolean }
  | { type: 'result' }
  | { type: 'index'; target: Node; index: number }
  | { type: 'call'; name: FunctionName; arg: Node }
  | { type: 'unary'; op: '!' | '-'; arg: Node }
  | { type: 'binary'; op: BinaryOp; left: Node; right: Node };

type BinaryOp = '||' | '&&' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%';
const FUNCTIONS = ['len', 'isNaN', 'isInf', 'abs', 'asFloat', 'asInt'] as const;
type FunctionName = (typeof FUNCTIONS)[number];

export type Value = number | boolean | readonly number[];

/** A comparison met NaN: the measurement has no usable value; the metric's noData policy decides. */
export class NoDataSignal extends Error {
  constructor(what: string) {
    super(`${what} compared NaN (no usable value)`);
  }
}

/** The condition could not be evaluated on this result (a wrong type, an index past the end): an Error measurement. */
export class EvaluationError extends Error {}

export interface Condition {
  readonly text: string;
  readonly tree: Node;
  /** The number compared with the result (`result[0] >= 0.95` → 0.95), for the threshold drawn and exported; else undefined. */
  readonly threshold: number | undefined;
}

const MAX_LENGTH = 1024;

type Token = { kind: 'number'; value: number; at: number } | { kind: 'word' | 'op'; value: string; at: number };

function tokenize(text: string, field: string): Token[] {
  const tokens: Token[] = [];
  const ops = ['&&', '||', '==', '!=', '<=', '>=', '<', '>', '+', '-', '*', '/', '%', '!', '(', ')', '[', ']'];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const number = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(text.slice(i));
    if (number) {
      tokens.push({ kind: 'number', value: Number(number[0]), at: i });
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
    if (word) {
      tokens.push({ kind: 'word', value: word[0], at: i });
      i += word[0].length;
      continue;
    }
    const op = ops.find((o) => text.startsWith(o, i));
    if (!op) {
      const hint = c === '"' || c === "'" || c === '`' ? ' (strings are not part of the supported subset)' : '';
      throw new ValidationError(field, `unexpected ${JSON.stringify(c)} at ${i + 1}${hint}`);
    }
    tokens.push({ kind: 'op', value: op, at: i });
    i += op.length;
  }
  return tokens;
}

class Parser {
  private pos = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly field: string,
  ) {}

  parse(): Node {
    if (this.tokens.length === 0) throw new ValidationError(this.field, 'is empty');
    const node = this.or();
    const rest = this.tokens[this.pos];
    if (rest) throw new ValidationError(this.field, `unexpected ${JSON.stringify(String(rest.value))} at ${rest.at + 1}`);
    return node;
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private accept(...values: string[]): string | undefined {
    const token = this.peek();
    if (token && token.kind !== 'number' && values.includes(token.value)) {
      this.pos++;
      return token.value;
    }
    return undefined;
  }

  private expect(value: string): void {
    if (!this.accept(value)) {
      const token = this.peek();
      throw new ValidationError(this.field, `expected ${JSON.stringify(value)} ${token ? `at ${token.at + 1}` : 'at the end'}`);
    }
  }

  private or(): Node {
    let left = this.and();
    while (this.accept('||', 'or')) left = { type: 'binary', op: '||', left, right: this.and() };
    return left;
  }

  private and(): Node {
    let left = this.compare();
    while (this.accept('&&', 'and')) left = { type: 'binary', op: '&&', left, right: this.compare() };
    return left;
  }

  private compare(): Node {
    const left = this.sum();
    const op = this.accept('==', '!=', '<=', '>=', '<', '>') as BinaryOp | undefined;
    if (!op) return left;
    const node: Node = { type: 'binary', op, left, right: this.sum() };
    if (this.accept('==', '!=', '<=', '>=', '<', '>')) throw new ValidationError(this.field, 'comparisons do not chain: use && between them');
    return node;
  }

  private sum(): Node {
    let left = this.product();
    for (let op = this.accept('+', '-'); op; op = this.accept('+', '-')) left = { type: 'binary', op: op as BinaryOp, left, right: this.product() };
    return left;
  }

  private product(): Node {
    let left = this.unary();
    for (let op = this.accept('*', '/', '%'); op; op = this.accept('*', '/', '%')) left = { type: 'binary', op: op as BinaryOp, left, right: this.unary() };
    return left;
  }

  private unary(): Node {
    if (this.accept('!', 'not')) return { type: 'unary', op: '!', arg: this.unary() };
    if (this.accept('-')) return { type: 'unary', op: '-', arg: this.unary() };
    return this.postfix();
  }

  private postfix(): Node {
    const target = this.primary();
    if (!this.accept('[')) return target;
    const token = this.peek();
    if (token?.kind !== 'number' || !Number.isInteger(token.value)) {
      throw new ValidationError(this.field, 'an index must be a whole number (result[0], result[1], …)');
    }
    this.pos++;
    this.expect(']');
    if (target.type !== 'result') throw new ValidationError(this.field, 'only `result` can be indexed');
    return { type: 'index', target, index: token.value };
  }

  private primary(): Node {
    const token = this.peek();
    if (!token) throw new ValidationError(this.field, 'ends too early');
    this.pos++;
    if (token.kind === 'number') return { type: 'number', value: token.value };
    if (token.value === '(') {
      const inner = this.or();
      this.expect(')');
      return inner;
    }
    if (token.kind === 'word') {
      if (token.value === 'true' || token.value === 'false') return { type: 'boolean', value: token.value === 'true' };
      if (token.value === 'result') return { type: 'result' };
      if ((FUNCTIONS as readonly string[]).includes(token.value)) {
        this.expect('(');
        const arg = this.or();
        this.expect(')');
        return { type: 'call', name: token.value as FunctionName, arg };
      }
      throw new ValidationError(
        this.field,
        `unknown name ${JSON.stringify(token.value)} at ${token.at + 1}: the supported subset knows \`result\`, numbers, true/false and ${FUNCTIONS.join(', ')}`,
      );
    }
    throw new ValidationError(this.field, `unexpected ${JSON.stringify(token.value)} at ${token.at + 1}`);
  }
}

/** `len(result) OP n` (either side) → the shortest length it guarantees when true, else 0. */
function lengthGuard(node: Node): number {
  if (node.type === 'binary' && node.op === '&&') return Math.max(lengthGuard(node.left), lengthGuard(node.right));
  if (node.type !== 'binary') return 0;
  const isLen = (n: Node) => n.type === 'call' && n.name === 'len' && n.arg.type === 'result';
  let op = node.op;
  let bound: Node = node.right;
  if (!isLen(node.left)) {
    if (!isLen(node.right)) return 0;
    bound = node.left;
    const flipped: Partial<Record<BinaryOp, BinaryOp>> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };
    op = flipped[op] ?? op;
  }
  if (bound.type !== 'number') return 0;
  if (op === '>') return Math.floor(bound.value) + 1;
  if (op === '>=' || op === '==') return Math.ceil(bound.value);
  return 0;
}

/** Refuses an index the length guards to its left do not cover (an empty vector never arrives: length ≥ 1). */
function checkGuards(node: Node, minLength: number, field: string): void {
  switch (node.type) {
    case 'index':
      if (node.index >= minLength) {
        throw new ValidationError(
          field,
          `result[${node.index}] is not guarded: write \`len(result) > ${node.index} && …\` before it (a result with fewer series would fail the measurement with an error)`,
        );
      }
      return;
    case 'call':
    case 'unary':
      checkGuards(node.arg, minLength, field);
      return;
    case 'binary':
      checkGuards(node.left, minLength, field);
      checkGuards(node.right, node.op === '&&' ? Math.max(minLength, lengthGuard(node.left)) : minLength, field);
      return;
    default:
      return;
  }
}

function findThreshold(node: Node): number | undefined {
  if (node.type === 'binary') {
    if (['<', '<=', '>', '>=', '==', '!='].includes(node.op)) {
      const usesResult = (n: Node): boolean =>
        n.type === 'result' || n.type === 'index' || ((n.type === 'unary' || (n.type === 'call' && n.name !== 'len')) && usesResult(n.arg));
      if (usesResult(node.left) && node.right.type === 'number') return node.right.value;
      if (usesResult(node.right) && node.left.type === 'number') return node.left.value;
      return undefined;
    }
    return findThreshold(node.left) ?? findThreshold(node.right);
  }
  return undefined;
}

/** Parses and checks a condition; a ValidationError names `field` and what is wrong. */
export function parseCondition(text: string, field: string): Condition {
  if (text.length > MAX_LENGTH) throw new ValidationError(field, `is longer than ${MAX_LENGTH} characters`);
  const tree = new Parser(tokenize(text, field), field).parse();
  checkGuards(tree, 1, field);
  return { text, tree, threshold: findThreshold(tree) };
}

function describe(value: Value): string {
  return Array.isArray(value) ? 'a list' : typeof value;
}

function number(value: Value, what: string): number {
  if (typeof value !== 'number') throw new EvaluationError(`${what} needs a number, got ${describe(value)}`);
  return value;
}

function boolean(value: Value, what: string): boolean {
  if (typeof value !== 'boolean') throw new EvaluationError(`${what} needs true or false, got ${describe(value)}`);
  return value;
}

function evaluate(node: Node, result: number | readonly number[]): Value {
  switch (node.type) {
    case 'number':
    case 'boolean':
      return node.value;
    case 'result':
      return result;
    case 'index': {
      if (!Array.isArray(result)) throw new EvaluationError(`result[${node.index}]: the query returned a scalar, not a vector`);
      if (node.index >= result.length) throw new EvaluationError(`result[${node.index}]: the vector has ${result.length} series`);
      return result[node.index]!;
    }
    case 'call': {
      const arg = evaluate(node.arg, result);
      switch (node.name) {
        case 'len':
          if (!Array.isArray(arg)) throw new EvaluationError(`len() needs a vector, got ${describe(arg)}`);
          return arg.length;
        case 'isNaN':
          return Number.isNaN(number(arg, 'isNaN()'));
        case 'isInf':
          return Math.abs(number(arg, 'isInf()')) === Number.POSITIVE_INFINITY;
        case 'abs':
          return Math.abs(number(arg, 'abs()'));
        case 'asFloat':
          return number(arg, 'asFloat()');
        case 'asInt':
          return Math.trunc(number(arg, 'asInt()'));
      }
      break;
    }
    case 'unary': {
      const arg = evaluate(node.arg, result);
      return node.op === '!' ? !boolean(arg, '!') : -number(arg, 'unary -');
    }
    case 'binary': {
      if (node.op === '&&' || node.op === '||') {
        const left = boolean(evaluate(node.left, result), node.op);
        if (node.op === '&&' ? !left : left) return left;
        return boolean(evaluate(node.right, result), node.op);
      }
      const left = evaluate(node.left, result);
      const right = evaluate(node.right, result);
      if ((node.op === '==' || node.op === '!=') && typeof left === 'boolean' && typeof right === 'boolean') {
        return node.op === '==' ? left === right : left !== right;
      }
      const a = number(left, node.op);
      const b = number(right, node.op);
      switch (node.op) {
        case '+':
          return a + b;
        case '-':
          return a - b;
        case '*':
          return a * b;
        case '/':
          return a / b;
        case '%':
          return a % b;
      }
      if (Number.isNaN(a) || Number.isNaN(b)) throw new NoDataSignal(`\`${node.op}\``);
      switch (node.op) {
        case '==':
          return a === b;
        case '!=':
          return a !== b;
        case '<':
          return a < b;
        case '<=':
          return a <= b;
        case '>':
          return a > b;
        case '>=':
          return a >= b;
      }
    }
  }
  throw new EvaluationError('unreachable');
}

/**
 * Evaluates a parsed condition on a measurement. Returns true or false; throws NoDataSignal when NaN reached a
 * comparison, EvaluationError when the condition does not fit the result (or does not answer true or false).
 */
export function evaluateCondition(condition: Condition, result: number | readonly number[]): boolean {
  const value = evaluate(condition.tree, result);
  if (typeof value !== 'boolean') throw new EvaluationError(`the condition gave ${describe(value)}, not true or false`);
  return value;
}
