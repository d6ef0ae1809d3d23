/**
 * A small subset of CEL, enough for the `x-kubernetes-validations` rules CRDs usually carry (immutability with
 * `self == oldSelf`, "required once set" with `has()`, size and range limits). Anything outside the subset is not
 * evaluated: `compileRule` returns undefined and the rule is skipped (the ADR lists what is covered).
 *
 * Supported: literals (int, double, string, bool, null, lists), `self`, `oldSelf`, field selection `a.b` and
 * `a['b']`, indexing `a[0]`, `has(a.b)`, `size(x)` / `x.size()`, `x.startsWith(s)`, `x.endsWith(s)`,
 * `x.contains(s)`, `x.matches(re)`, `in`, `!`, unary `-`, `+ - * / %`, `== != < <= > >=`, `&& ||`, `? :`, parentheses.
 */

type Value = unknown;

type Node =
  | { k: 'lit'; v: Value }
  | { k: 'id'; name: string }
  | { k: 'sel'; of: Node; field: string }
  | { k: 'idx'; of: Node; index: Node }
  | { k: 'has'; of: Node; field: string }
  | { k: 'call'; fn: string; target: Node | undefined; args: Node[] }
  | { k: 'list'; items: Node[] }
  | { k: 'un'; op: string; x: Node }
  | { k: 'bin'; op: string; a: Node; b: Node }
  | { k: 'cond'; c: Node; a: Node; b: Node };

/** A rule that failed to evaluate (missing key, wrong operand types): reported as an error, as kube-apiserver does. */
export class RuleEvalError extends Error {}

class Unsupported extends Error {}

const TOKEN =
  /\s*(?:(\d+\.\d+(?:[eE][+-]?\d+)?)|(\d+)(u?)|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|([A-Za-z_][A-Za-z0-9_]*)|(==|!=|<=|>=|&&|\|\||[-+*/%<>!()[\].,?:]))/y;

interface Token {
  t: 'num' | 'str' | 'id' | 'op';
  v: string | number;
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(text);
    if (!m) throw new Unsupported(`unexpected input at ${at}`);
    at = TOKEN.lastIndex;
    if (m[1] !== undefined) tokens.push({ t: 'num', v: Number(m[1]) });
    else if (m[2] !== undefined) tokens.push({ t: 'num', v: Number(m[2]) });
    else if (m[4] !== undefined) tokens.push({ t: 'str', v: unquote(m[4]) });
    else if (m[5] !== undefined) tokens.push({ t: 'id', v: m[5] });
    else tokens.push({ t: 'op', v: m[6]! });
  }
  return tokens;
}

function unquote(quoted: string): string {
  const body = quoted.slice(1, -1);
  return body.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r' })[c] ?? c);
}

class Parser {
  private i = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): Node {
    const node = this.cond();
    if (this.i !== this.tokens.length) throw new Unsupported('trailing input');
    return node;
  }

  private peek(v: string): boolean {
    const token = this.tokens[this.i];
    return token !== undefined && (token.t === 'op' || token.t === 'id') && token.v === v;
  }

  private eat(v: string): boolean {
    if (!this.peek(v)) return false;
    this.i++;
    return true;
  }

  private expect(v: string): void {
    if (!this.eat(v)) throw new Unsupported(`expected ${v}`);
  }

  private cond(): Node {
    const c = this.or();
    if (!this.eat('?')) return c;
    const a = this.cond();
    this.expect(':');
    return { k: 'cond', c, a, b: this.cond() };
  }

  private or(): Node {
    let a = this.and();
    while (this.eat('||')) a = { k: 'bin', op: '||', a, b: this.and() };
    return a;
  }

  private and(): Node {
    let a = this.rel();
    while (this.eat('&&')) a = { k: 'bin', op: '&&', a, b: this.rel() };
    return a;
  }

  private rel(): Node {
    const a = this.add();
    for (const op of ['==', '!=', '<=', '>=', '<', '>', 'in']) if (this.eat(op)) return { k: 'bin', op, a, b: this.add() };
    return a;
  }

  private add(): Node {
    let a = this.mul();
    for (;;) {
      if (this.eat('+')) a = { k: 'bin', op: '+', a, b: this.mul() };
      else if (this.eat('-')) a = { k: 'bin', op: '-', a, b: this.mul() };
      else return a;
    }
  }

  private mul(): Node {
    let a = this.unary();
    for (;;) {
      const op = ['*', '/', '%'].find((o) => this.peek(o));
      if (!op) return a;
      this.i++;
      a = { k: 'bin', op, a, b: this.unary() };
    }
  }

  private unary(): Node {
    if (this.eat('!')) return { k: 'un', op: '!', x: this.unary() };
    if (this.eat('-')) return { k: 'un', op: '-', x: this.unary() };
    return this.postfix();
  }

  private postfix(): Node {
    let node = this.primary();
    for (;;) {
      if (this.eat('.')) {
        const name = this.ident();
        if (this.eat('(')) node = { k: 'call', fn: name, target: node, args: this.args(')') };
        else node = { k: 'sel', of: node, field: name };
      } else if (this.eat('[')) {
        const index = this.cond();
        this.expect(']');
        node = { k: 'idx', of: node, index };
      } else return node;
    }
  }

  private ident(): string {
    const token = this.tokens[this.i++];
    if (token?.t !== 'id') throw new Unsupported('expected a name');
    return token.v as string;
  }

  private args(close: string): Node[] {
    const args: Node[] = [];
    if (this.eat(close)) return args;
    do args.push(this.cond());
    while (this.eat(','));
    this.expect(close);
    return args;
  }

  private primary(): Node {
    const token = this.tokens[this.i++];
    if (!token) throw new Unsupported('unexpected end');
    if (token.t === 'num' || token.t === 'str') return { k: 'lit', v: token.v };
    if (token.t === 'op') {
      if (token.v === '(') {
        const inner = this.cond();
        this.expect(')');
        return inner;
      }
      if (token.v === '[') return { k: 'list', items: this.args(']') };
      throw new Unsupported(`unexpected ${token.v}`);
    }
    const name = token.v as string;
    if (name === 'true' || name === 'false') return { k: 'lit', v: name === 'true' };
    if (name === 'null') return { k: 'lit', v: null };
    if (name === 'has') {
      this.expect('(');
      const arg = this.postfix();
      this.expect(')');
      if (arg.k !== 'sel') throw new Unsupported('has() needs a field selection');
      return { k: 'has', of: arg.of, field: arg.field };
    }
    if (this.eat('(')) {
      if (name !== 'size' && name !== 'int' && name !== 'string') throw new Unsupported(`function ${name}`);
      return { k: 'call', fn: name, target: undefined, args: this.args(')') };
    }
    if (name !== 'self' && name !== 'oldSelf') throw new Unsupported(`variable ${name}`);
    return { k: 'id', name };
  }
}

export interface CompiledRule {
  /** Whether the rule reads `oldSelf` (a transition rule: evaluated on update only, where an old value exists). */
  readonly transition: boolean;
  evaluate(self: Value, oldSelf: Value): boolean;
}

/** Compiles a rule of the supported subset; undefined for anything else (the caller skips it). */
export function compileRule(rule: string): CompiledRule | undefined {
  let ast: Node;
  try {
    ast = new Parser(tokenize(rule)).parse();
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
  return {
    transition: /\boldSelf\b/.test(rule),
    evaluate(self, oldSelf) {
      const result = evaluate(ast, { self, oldSelf });
      if (typeof result !== 'boolean') throw new RuleEvalError('rule did not evaluate to a bool');
      return result;
    },
  };
}

function evaluate(node: Node, vars: { self: Value; oldSelf: Value }): Value {
  switch (node.k) {
    case 'lit':
      return node.v;
    case 'id':
      return node.name === 'self' ? vars.self : vars.oldSelf;
    case 'list':
      return node.items.map((n) => evaluate(n, vars));
    case 'sel':
    case 'idx': {
      const of = evaluate(node.of, vars);
      const key = node.k === 'sel' ? node.field : evaluate(node.index, vars);
      if (Array.isArray(of) && typeof key === 'number') {
        if (key < 0 || key >= of.length) throw new RuleEvalError(`index out of bounds: ${key}`);
        return of[key];
      }
      if (typeof of === 'object' && of !== null && typeof key === 'string') {
        if (!(key in of)) throw new RuleEvalError(`no such key: ${key}`);
        return (of as Record<string, unknown>)[key];
      }
      throw new RuleEvalError(`no such key: ${String(key)}`);
    }
    case 'has': {
      const of = evaluate(node.of, vars);
      return typeof of === 'object' && of !== null && !Array.isArray(of) && (of as Record<string, unknown>)[node.field] !== undefined;
    }
    case 'call':
      return call(
        node.fn,
        node.target === undefined ? undefined : evaluate(node.target, vars),
        node.args.map((a) => evaluate(a, vars)),
      );
    case 'un': {
      const x = evaluate(node.x, vars);
      if (node.op === '!') {
        if (typeof x !== 'boolean') throw new RuleEvalError('no such overload: !');
        return !x;
      }
      if (typeof x !== 'number') throw new RuleEvalError('no such overload: -');
      return -x;
    }
    case 'cond': {
      const c = evaluate(node.c, vars);
      if (typeof c !== 'boolean') throw new RuleEvalError('no such overload: ?:');
      return evaluate(c ? node.a : node.b, vars);
    }
    case 'bin':
      return binary(node.op, node.a, node.b, vars);
  }
}

function binary(op: string, an: Node, bn: Node, vars: { self: Value; oldSelf: Value }): Value {
  if (op === '&&' || op === '||') {
    // CEL's logical operators are commutative over errors: false && error is false, true || error is true.
    let a: Value;
    let failure: unknown;
    try {
      a = evaluate(an, vars);
    } catch (error) {
      failure = error;
    }
    if (failure === undefined && a === (op === '||')) return a;
    const b = evaluate(bn, vars);
    if (b === (op === '||')) return b;
    if (failure !== undefined) throw failure;
    if (typeof a !== 'boolean' || typeof b !== 'boolean') throw new RuleEvalError(`no such overload: ${op}`);
    return op === '&&' ? a && b : a || b;
  }
  const a = evaluate(an, vars);
  const b = evaluate(bn, vars);
  switch (op) {
    case '==':
      return jsonEqual(a, b);
    case '!=':
      return !jsonEqual(a, b);
    case 'in':
      if (Array.isArray(b)) return b.some((x) => jsonEqual(x, a));
      if (typeof b === 'object' && b !== null && typeof a === 'string') return a in b;
      throw new RuleEvalError('no such overload: in');
  }
  if (typeof a === 'number' && typeof b === 'number') {
    const shared = orderedOrSum(op, a, b);
    if (shared !== undefined) return shared;
    switch (op) {
      case '-':
        return a - b;
      case '*':
        return a * b;
      case '/':
        if (b === 0) throw new RuleEvalError('division by zero');
        return Number.isInteger(a) && Number.isInteger(b) ? Math.trunc(a / b) : a / b;
      case '%':
        if (b === 0) throw new RuleEvalError('modulus by zero');
        return a % b;
    }
  }
  if (typeof a === 'string' && typeof b === 'string') {
    const shared = orderedOrSum(op, a, b);
    if (shared !== undefined) return shared;
  }
  if (op === '+' && Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  throw new RuleEvalError(`no such overload: ${op}`);
}

/**
 * The operators CEL defines alike on two numbers and on two strings: ordering, and `+` (sum, or concatenation).
 * Undefined when `op` is none of them.
 */
function orderedOrSum<T extends number | string>(op: string, a: T, b: T): boolean | T | undefined {
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '+':
      return (typeof a === 'number' ? a + (b as number) : `${a}${b}`) as T;
  }
  return undefined;
}

function call(fn: string, target: Value, args: Value[]): Value {
  const subject = target === undefined ? args.shift() : target;
  switch (fn) {
    case 'size':
      if (typeof subject === 'string') return [...subject].length;
      if (Array.isArray(subject)) return subject.length;
      if (typeof subject === 'object' && subject !== null) return Object.keys(subject).length;
      break;
    case 'int':
      if (typeof subject === 'number') return Math.trunc(subject);
      if (typeof subject === 'string' && /^-?\d+$/.test(subject)) return Number(subject);
      break;
    case 'string':
      if (typeof subject === 'string' || typeof subject === 'number' || typeof subject === 'boolean') return String(subject);
      break;
    case 'startsWith':
    case 'endsWith':
    case 'contains':
    case 'matches': {
      const arg = args[0];
      if (typeof subject !== 'string' || typeof arg !== 'string') break;
      if (fn === 'matches') return new RegExp(arg, 'u').test(subject);
      return fn === 'contains' ? subject.includes(arg) : fn === 'startsWith' ? subject.startsWith(arg) : subject.endsWith(arg);
    }
  }
  throw new RuleEvalError(`no such overload: ${fn}`);
}

function jsonEqual(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  return ak.length === bk.length && ak.every((k) => k in b && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
