import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { NOT_GRANTED, PERMISSIONS, ROLLPLANE_NAMESPACE } from '../../deploy/permissions.js';
import { projectRoot } from '../helpers/child.js';
import { scanKubeCalls } from './kubeCalls.js';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}
interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
}

const docs = parseAllDocuments(readFileSync(path.join(projectRoot, 'deploy/base/10-rbac.yaml'), 'utf8')).map((d) => d.toJS() as Doc);
const find = (kind: string) => docs.find((d) => d.kind === kind)!;

const triples = (rules: readonly Rule[]) =>
  new Set(rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}|${res}|${v}`))))).values();
const tableTriples = (scope: 'cluster' | 'lease-namespace') =>
  PERMISSIONS.filter((p) => p.scope === scope).flatMap((p) => p.verbs.map((v) => `${p.group}|${p.resource}|${v}`));

// The reconcilers, their runtime (informers, leader election) and the Kubernetes client wrappers.
// src/clusters/sources: the member cluster Secrets rollplane reads and writes in its own cluster (a member's own calls
// are made with the member's credentials, not this RBAC).
const scanned = scanKubeCalls(projectRoot, ['src/controller', 'src/controllers', 'src/kinds', 'src/kube', 'src/clusters']);

describe('deploy/base/10-rbac.yaml', () => {
  it('grants in its ClusterRole exactly the cluster-wide rows of deploy/permissions.ts', () => {
    const clusterRole = find('ClusterRole');
    expect([...triples(clusterRole.rules!)].sort()).toEqual(tableTriples('cluster').sort());
    expect(clusterRole.rules!.flatMap((r) => r.verbs)).not.toContain('*');
    expect(clusterRole.rules!.flatMap((r) => r.resources)).not.toContain('*');
  });

  it('grants leases only in rollplane-system, through a Role', () => {
    const role = find('Role');
    expect(role.metadata.namespace).toBe(ROLLPLANE_NAMESPACE);
    expect([...triples(role.rules!)].sort()).toEqual(tableTriples('lease-namespace').sort());
  });

  it('binds both to the rollplane service account', () => {
    const sa = find('ServiceAccount');
    for (const [binding, role] of [
      ['ClusterRoleBinding', 'ClusterRole'],
      ['RoleBinding', 'Role'],
    ] as const) {
      const doc = find(binding);
      expect(doc.roleRef).toMatchObject({ kind: role, name: find(role).metadata.name });
      expect(doc.subjects).toEqual([{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace }]);
    }
  });
});

describe('deploy/permissions.ts against the code', () => {
  const used = new Map<string, string[]>();
  for (const call of scanned.calls) {
    const key = `${call.group}|${call.resource}|${call.verb}`;
    used.set(key, [...(used.get(key) ?? []), call.at]);
  }
  const granted = new Set([...tableTriples('cluster'), ...tableTriples('lease-namespace')]);
  const refused = new Set(NOT_GRANTED.map((n) => `${n.group}|${n.resource}|${n.verb}`));

  it('understands every Kubernetes call site it finds', () => {
    expect(scanned.unresolved).toEqual([]);
    // The scan itself must see the calls it is meant to see (a broken scanner would pass the next test vacuously).
    expect(used.get('network.harvesterhci.io|ippools/status|update')).toBeDefined();
    expect(used.get('coordination.k8s.io|leases|create')?.filter((at) => /LeaderElector\.ts/.test(at))).toHaveLength(1);
    expect(used.get('|pods|watch')).toBeDefined();
  });

  it('grants (or knowingly refuses) every (group, resource, verb) the code uses', () => {
    const missing = [...used.entries()].filter(([key]) => !granted.has(key) && !refused.has(key)).map(([key, at]) => `${key} used at ${at.join(', ')}`);
    expect(missing).toEqual([]);
  });

  it('grants nothing the code does not use', () => {
    const unused = [...granted, ...refused].filter((key) => !used.has(key));
    expect(unused).toEqual([]);
  });
});
