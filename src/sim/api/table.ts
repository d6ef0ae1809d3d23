import type { KubeObject, ResourceType } from '../types.js';

/**
 * Server-side printing (`meta.k8s.io/v1` Table), which kubectl asks for on `get`: per kind the columns `kubectl get`
 * shows against a real cluster (pods READY/STATUS/RESTARTS, deployments READY/UP-TO-DATE/AVAILABLE, …), NAME and AGE
 * for the rest; custom resources get NAME and their CRD's additionalPrinterColumns. Columns with priority 1 appear with
 * `-o wide`.
 */
interface Column {
  name: string;
  type: 'string' | 'integer' | 'date';
  priority?: number;
  cell: (o: KubeObject, now: number) => string | number;
}

const name: Column = { name: 'Name', type: 'string', cell: (o) => o.metadata.name };
const age: Column = { name: 'Age', type: 'string', cell: (o, now) => humanAge(o.metadata.creationTimestamp, now) };

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const conditionStatus = (o: KubeObject, type: string): string =>
  (o.status?.conditions as { type: string; status: string }[] | undefined)?.find((c) => c.type === type)?.status ?? '';

const COLUMNS: Record<string, Column[]> = {
  '/pods': [
    name,
    {
      name: 'Ready',
      type: 'string',
      cell: (o) => {
        const statuses = (o.status?.containerStatuses ?? []) as { ready?: boolean }[];
        return `${statuses.filter((s) => s.ready).length}/${(o.spec?.containers ?? []).length}`;
      },
    },
    { name: 'Status', type: 'string', cell: podStatus },
    {
      name: 'Restarts',
      type: 'integer',
      cell: (o) => ((o.status?.containerStatuses ?? []) as { restartCount?: number }[]).reduce((n, s) => n + num(s.restartCount), 0),
    },
    age,
    { name: 'IP', type: 'string', priority: 1, cell: (o) => o.status?.podIP ?? '<none>' },
    { name: 'Node', type: 'string', priority: 1, cell: (o) => o.spec?.nodeName ?? '<none>' },
  ],
  'apps/deployments': [
    name,
    { name: 'Ready', type: 'string', cell: (o) => `${num(o.status?.readyReplicas)}/${num(o.spec?.replicas ?? 1)}` },
    { name: 'Up-to-date', type: 'integer', cell: (o) => num(o.status?.updatedReplicas) },
    { name: 'Available', type: 'integer', cell: (o) => num(o.status?.availableReplicas) },
    age,
    { name: 'Images', type: 'string', priority: 1, cell: images },
  ],
  'apps/replicasets': [
    name,
    { name: 'Desired', type: 'integer', cell: (o) => num(o.spec?.replicas ?? 1) },
    { name: 'Current', type: 'integer', cell: (o) => num(o.status?.replicas) },
    { name: 'Ready', type: 'integer', cell: (o) => num(o.status?.readyReplicas) },
    age,
    { name: 'Images', type: 'string', priority: 1, cell: images },
  ],
  'apps/daemonsets': [
    name,
    { name: 'Desired', type: 'integer', cell: (o) => num(o.status?.desiredNumberScheduled) },
    { name: 'Current', type: 'integer', cell: (o) => num(o.status?.currentNumberScheduled) },
    { name: 'Ready', type: 'integer', cell: (o) => num(o.status?.numberReady) },
    { name: 'Up-to-date', type: 'integer', cell: (o) => num(o.status?.updatedNumberScheduled) },
    { name: 'Available', type: 'integer', cell: (o) => num(o.status?.numberAvailable) },
    age,
    { name: 'Images', type: 'string', priority: 1, cell: images },
  ],
  'apps/statefulsets': [
    name,
    { name: 'Ready', type: 'string', cell: (o) => `${num(o.status?.readyReplicas)}/${num(o.spec?.replicas ?? 1)}` },
    age,
    { name: 'Images', type: 'string', priority: 1, cell: images },
  ],
  '/nodes': [
    name,
    {
      name: 'Status',
      type: 'string',
      cell: (o) => {
        const ready = conditionStatus(o, 'Ready');
        const base = ready === 'True' ? 'Ready' : ready === 'False' ? 'NotReady' : 'Unknown';
        return o.spec?.unschedulable ? `${base},SchedulingDisabled` : base;
      },
    },
    {
      name: 'Roles',
      type: 'string',
      cell: (o) =>
        Object.keys(o.metadata.labels ?? {})
          .filter((k) => k.startsWith('node-role.kubernetes.io/'))
          .map((k) => k.slice('node-role.kubernetes.io/'.length))
          .join(',') || '<none>',
    },
    age,
    { name: 'Version', type: 'string', cell: (o) => o.status?.nodeInfo?.kubeletVersion ?? '' },
  ],
  '/events': [
    {
      name: 'Last Seen',
      type: 'string',
      cell: (o, now) => humanAge((o.lastTimestamp as string | undefined) ?? (o.eventTime as string | undefined) ?? o.metadata.creationTimestamp, now),
    },
    { name: 'Type', type: 'string', cell: (o) => String(o.type ?? '') },
    { name: 'Reason', type: 'string', cell: (o) => String(o.reason ?? '') },
    {
      name: 'Object',
      type: 'string',
      cell: (o) => {
        const ref = (o.involvedObject ?? {}) as { kind?: string; name?: string };
        return `${(ref.kind ?? '').toLowerCase()}/${ref.name ?? ''}`;
      },
    },
    { name: 'Message', type: 'string', cell: (o) => String(o.message ?? '') },
  ],
  '/namespaces': [name, { name: 'Status', type: 'string', cell: (o) => o.status?.phase ?? '' }, age],
};

const DEFAULT_COLUMNS = [name, age];

function images(o: KubeObject): string {
  return ((o.spec?.template?.spec?.containers ?? []) as { image?: string }[]).map((c) => c.image ?? '').join(',');
}

function podStatus(o: KubeObject): string {
  if (o.metadata.deletionTimestamp) return 'Terminating';
  for (const s of (o.status?.containerStatuses ?? []) as { state?: { waiting?: { reason?: string }; terminated?: { reason?: string } } }[]) {
    const reason = s.state?.waiting?.reason ?? s.state?.terminated?.reason;
    if (reason) return reason;
  }
  return o.status?.reason ?? o.status?.phase ?? 'Pending';
}

/** kubectl's short age: 45s, 3m12s, 25m, 5h10m, 3d4h, 12d. */
export function humanAge(timestamp: string | undefined, now: number): string {
  if (!timestamp) return '<unknown>';
  const s = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  const d = Math.floor(h / 24);
  if (s < 120) return `${s}s`;
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (h < 3) return `${m}m`;
  if (h < 8) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  if (h < 48) return `${h}h`;
  if (d < 8) return `${d}d${h % 24 ? `${h % 24}h` : ''}`;
  return `${d}d`;
}

/** True when the Accept header asks for a Table (kubectl get does; client-node never). */
export function wantsTable(accept: string | undefined): boolean {
  return accept?.includes('as=Table') === true;
}

export const TABLE_CONTENT_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

export function toTable(type: ResourceType, objects: KubeObject[], listMetadata: Record<string, unknown>, now: number): Record<string, unknown> {
  const columns = type.printerColumns ? crdColumns(type.printerColumns) : (COLUMNS[`${type.group}/${type.plural}`] ?? DEFAULT_COLUMNS);
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMetadata,
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.name === 'Name' ? 'name' : '',
      description: '',
      priority: c.priority ?? 0,
    })),
    rows: objects.map((o) => ({
      cells: columns.map((c) => c.cell(o, now)),
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}

const crdColumnCache = new WeakMap<object, Column[]>();

/** NAME, then a CRD version's additionalPrinterColumns (a date column prints as an age, as kubectl shows it). */
function crdColumns(printer: NonNullable<ResourceType['printerColumns']>): Column[] {
  let columns = crdColumnCache.get(printer);
  if (columns) return columns;
  columns = [
    name,
    ...printer.map((c): Column => {
      const read = jsonPath(c.jsonPath);
      const column: Column =
        c.type === 'date'
          ? {
              name: c.name,
              type: 'date',
              cell: (o, now) => {
                const v = read(o);
                return typeof v === 'string' ? humanAge(v, now) : '<unknown>';
              },
            }
          : {
              name: c.name,
              type: c.type === 'integer' ? 'integer' : 'string',
              cell: (o) => {
                const v = read(o);
                return v === undefined ? '' : typeof v === 'number' ? v : typeof v === 'string' ? v : JSON.stringify(v);
              },
            };
      if (c.priority) column.priority = c.priority;
      return column;
    }),
  ];
  crdColumnCache.set(printer, columns);
  return columns;
}

/**
 * The JSONPath subset printer columns use: `.a.b`, `.a[0]`, and a filter `.a[?(@.k=='v')].b` (first match). Anything
 * else prints empty.
 */
function jsonPath(path: string): (o: KubeObject) => unknown {
  const steps: ((v: unknown) => unknown)[] = [];
  const re = /\.([A-Za-z0-9_-]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_-]+)\s*==\s*['"]([^'"]*)['"]\)\]/gy;
  let at = 0;
  while (at < path.length) {
    const m = re.exec(path);
    if (m === null) break;
    at = re.lastIndex;
    const [, field, index, key, value] = m;
    if (field !== undefined) steps.push((v) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[field] : undefined));
    else if (index !== undefined) steps.push((v) => (Array.isArray(v) ? v[Number(index)] : undefined));
    else
      steps.push((v) => (Array.isArray(v) ? v.find((x) => typeof x === 'object' && x !== null && (x as Record<string, unknown>)[key!] === value) : undefined));
  }
  if (at !== path.length) return () => undefined;
  return (o) => steps.reduce<unknown>((v, step) => (v === undefined ? v : step(v)), o);
}
