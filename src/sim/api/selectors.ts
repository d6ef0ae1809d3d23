import type { KubeObject } from '../types.js';
import { badRequest } from '../store/errors.js';

/** A parsed label or field selector; `matches` is all that list and watch need. */
export interface Selector {
  matches(object: KubeObject): boolean;
  readonly empty: boolean;
}

type LabelRequirement =
  | { op: 'eq' | 'neq'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: Set<string> }
  | { op: 'exists' | 'notexists'; key: string };

const EVERYTHING: Selector = { matches: () => true, empty: true };

/** Parses the labelSelector query syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, comma-joined. */
export function parseLabelSelector(text: string | null | undefined): Selector {
  if (!text?.trim()) return EVERYTHING;
  const requirements = splitTopLevel(text).map(parseLabelRequirement);
  return {
    empty: false,
    matches(object) {
      const labels = object.metadata.labels ?? {};
      for (const r of requirements) if (!matchLabel(r, labels)) return false;
      return true;
    },
  };
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += ch;
  }
  parts.push(current.trim());
  return parts.filter((p) => p.length > 0);
}

function parseLabelRequirement(part: string): LabelRequirement {
  let m = /^([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
  if (m) {
    const values = new Set(
      m[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v.length > 0),
    );
    return { op: m[2] as 'in' | 'notin', key: m[1]!, values };
  }
  m = /^([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(part);
  if (m) return { op: m[2] === '!=' ? 'neq' : 'eq', key: m[1]!, value: m[3]! };
  m = /^!\s*([^\s!=()]+)$/.exec(part);
  if (m) return { op: 'notexists', key: m[1]! };
  m = /^([^\s!=()]+)$/.exec(part);
  if (m) return { op: 'exists', key: m[1]! };
  throw badRequest(`unable to parse requirement: "${part}"`);
}

function matchLabel(r: LabelRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.op) {
    case 'eq':
      return has && value === r.value;
    case 'neq':
      return !has || value !== r.value;
    case 'in':
      return has && r.values.has(value!);
    case 'notin':
      return !has || !r.values.has(value!);
    case 'exists':
      return has;
    case 'notexists':
      return !has;
  }
}

/** Field paths the simulator can select on, for every kind (metadata.*) and for pods (spec.nodeName, status.phase). */
const FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata.name,
  'metadata.namespace': (o) => o.metadata.namespace ?? '',
  'spec.nodeName': (o) => o.spec?.nodeName ?? '',
  'status.phase': (o) => o.status?.phase ?? '',
  'spec.schedulerName': (o) => o.spec?.schedulerName ?? '',
  'spec.restartPolicy': (o) => o.spec?.restartPolicy ?? '',
  'spec.serviceAccountName': (o) => o.spec?.serviceAccountName ?? '',
  'status.podIP': (o) => o.status?.podIP ?? '',
  'involvedObject.name': (o) => (o.involvedObject as any)?.name ?? '',
  'involvedObject.namespace': (o) => (o.involvedObject as any)?.namespace ?? '',
  'involvedObject.kind': (o) => (o.involvedObject as any)?.kind ?? '',
  'involvedObject.uid': (o) => (o.involvedObject as any)?.uid ?? '',
  type: (o) => String(o.type ?? ''),
};

/** Parses the fieldSelector syntax: `f=v`, `f==v`, `f!=v`, comma-joined. Unknown fields → 400 as in Kubernetes. */
export function parseFieldSelector(text: string | null | undefined): Selector {
  if (!text?.trim()) return EVERYTHING;
  const terms = text.split(',').map((part) => {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
    const get = FIELDS[m[1]!];
    if (!get) throw badRequest(`field label not supported: ${m[1]}`);
    return { get, negate: m[2] === '!=', value: m[3]! };
  });
  return {
    empty: false,
    matches(object) {
      for (const t of terms) if ((t.get(object) === t.value) === t.negate) return false;
      return true;
    },
  };
}
