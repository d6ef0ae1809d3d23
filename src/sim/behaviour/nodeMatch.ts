/** Whether a pod spec may run on a node: nodeSelector and required node affinity, as the scheduler evaluates them. */
import type { KubeObject } from '../types.js';

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

interface NodeSelectorTerm {
  matchExpressions?: Requirement[];
  matchFields?: Requirement[];
}

export function podFitsNode(podSpec: any, node: KubeObject): boolean {
  const labels = node.metadata.labels ?? {};
  const selector: Record<string, string> | undefined = podSpec?.nodeSelector;
  if (selector) for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  const terms: NodeSelectorTerm[] | undefined = podSpec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  // Terms are ORed; the requirements inside one term are ANDed.
  return terms.some(
    (term) =>
      (term.matchExpressions ?? []).every((r) => requirementHolds(r, labels[r.key])) &&
      (term.matchFields ?? []).every((r) => requirementHolds(r, r.key === 'metadata.name' ? node.metadata.name : undefined)),
  );
}

function requirementHolds(r: Requirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
      return value !== undefined && Number(value) > Number(values[0]);
    case 'Lt':
      return value !== undefined && Number(value) < Number(values[0]);
    default:
      return false;
  }
}

interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

interface Taint {
  key: string;
  value?: string;
  effect: string;
}

/**
 * Whether the pod tolerates every NoSchedule/NoExecute taint of the node. DaemonSet pods get upstream's automatic
 * tolerations for the `node.kubernetes.io/*` condition taints (they run on unreachable or not-ready nodes too).
 */
export function toleratesNode(podSpec: any, node: KubeObject, daemon = false): boolean {
  const taints: Taint[] = node.spec?.taints ?? [];
  const tolerations: Toleration[] = podSpec?.tolerations ?? [];
  return taints.every(
    (taint) => taint.effect === 'PreferNoSchedule' || (daemon && taint.key.startsWith('node.kubernetes.io/')) || tolerations.some((t) => tolerates(t, taint)),
  );
}

function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

export function isNodeReady(node: KubeObject | undefined): boolean {
  const conditions: { type: string; status: string }[] | undefined = node?.status?.conditions;
  return conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

export function isNodeSchedulable(node: KubeObject): boolean {
  return isNodeReady(node) && !node.spec?.unschedulable;
}
