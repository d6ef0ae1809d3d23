import { badRequest, SimApiError } from '../../store/errors.js';
import { deepClone, deepEqual, isPlainObject } from '../../store/objects.js';

interface Operation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
}

/**
 * RFC 6902 JSON patch over a deep copy of `document`. A malformed patch is 400; an operation that cannot apply
 * (missing path, failed `test`) is 422 Invalid, as the Kubernetes API server answers.
 */
export function applyJsonPatch(document: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw badRequest('json patch must be an array of operations');
  let doc = deepClone(document);
  for (const raw of patch) {
    if (!isPlainObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw badRequest(`invalid json patch operation: ${JSON.stringify(raw)}`);
    }
    const op = raw as Operation;
    switch (op.op) {
      case 'add':
        doc = put(doc, parsePointer(op.path), deepClone(op.value), 'add');
        break;
      case 'remove':
        doc = take(doc, parsePointer(op.path)).doc;
        break;
      case 'replace':
        doc = put(doc, parsePointer(op.path), deepClone(op.value), 'replace');
        break;
      case 'move': {
        const taken = take(doc, parsePointer(requireFrom(op)));
        doc = put(taken.doc, parsePointer(op.path), taken.value, 'add');
        break;
      }
      case 'copy':
        doc = put(doc, parsePointer(op.path), deepClone(read(doc, parsePointer(requireFrom(op)))), 'add');
        break;
      case 'test':
        if (!deepEqual(read(doc, parsePointer(op.path)), op.value)) {
          throw unprocessable(`testing value ${op.path} failed`);
        }
        break;
      default:
        throw badRequest(`unknown json patch operation "${(op as { op: string }).op}"`);
    }
  }
  return doc;
}

function requireFrom(op: Operation): string {
  if (typeof op.from !== 'string') throw badRequest(`json patch ${op.op} needs "from"`);
  return op.from;
}

function unprocessable(message: string): SimApiError {
  return new SimApiError(422, 'Invalid', `the server rejected our request due to an error in our request: ${message}`);
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw badRequest(`invalid json pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function read(doc: unknown, path: string[]): unknown {
  let node: any = doc;
  for (const token of path) {
    if (Array.isArray(node)) {
      const i = arrayIndex(token, node.length, false);
      node = node[i];
    } else if (isPlainObject(node) && Object.hasOwn(node, token)) {
      node = node[token];
    } else {
      throw unprocessable(`path /${path.join('/')} does not exist`);
    }
  }
  return node;
}

function arrayIndex(token: string, length: number, forAdd: boolean): number {
  if (forAdd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw unprocessable(`invalid array index "${token}"`);
  const i = Number(token);
  if (i > length || (!forAdd && i === length)) throw unprocessable(`array index ${i} out of bounds`);
  return i;
}

function put(doc: unknown, path: string[], value: unknown, mode: 'add' | 'replace'): unknown {
  if (path.length === 0) return value;
  const parent: any = read(doc, path.slice(0, -1));
  const last = path[path.length - 1]!;
  if (Array.isArray(parent)) {
    const i = arrayIndex(last, parent.length, mode === 'add');
    if (mode === 'add') parent.splice(i, 0, value);
    else parent[i] = value;
  } else if (isPlainObject(parent)) {
    if (mode === 'replace' && !Object.hasOwn(parent, last)) {
      throw unprocessable(`replace operation does not apply: doc is missing key: /${path.join('/')}`);
    }
    parent[last] = value;
  } else {
    throw unprocessable(`path /${path.join('/')} has no parent object`);
  }
  return doc;
}

function take(doc: unknown, path: string[]): { doc: unknown; value: unknown } {
  if (path.length === 0) return { doc: undefined, value: doc };
  const parent: any = read(doc, path.slice(0, -1));
  const last = path[path.length - 1]!;
  let value: unknown;
  if (Array.isArray(parent)) {
    const i = arrayIndex(last, parent.length, false);
    value = parent.splice(i, 1)[0];
  } else if (isPlainObject(parent) && Object.hasOwn(parent, last)) {
    value = parent[last];
    delete parent[last];
  } else {
    throw unprocessable(`remove operation does not apply: doc is missing path: /${path.join('/')}`);
  }
  return { doc, value };
}
