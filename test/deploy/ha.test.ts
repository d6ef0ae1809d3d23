import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { zeroDelays } from '../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { projectRoot } from '../helpers/child.js';

/** deploy/ha rendered with kubectl kustomize, checked against the single-replica install, and applied to the simulator. */

const run = promisify(execFile);
const KUBECTL = process.env.KUBECTL ?? 'kubectl';
const DEPLOY = path.join(projectRoot, 'deploy');
const HA = path.join(DEPLOY, 'ha');

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [key: string]: any };

let sim: Simulator;
let dir: string;
let rendered: Obj[];
let single: Obj[];

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(KUBECTL, ['--kubeconfig', sim.kubeconfigPath, '--cache-dir', path.join(dir, 'cache'), ...args], { timeout: 60_000 });
  return stdout;
}

const parse = (text: string) =>
  parseAllDocuments(text)
    .map((doc) => doc.toJS() as Obj)
    .filter(Boolean);
const only = (objects: Obj[], kind: string) => {
  const found = objects.filter((m) => m.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
};
const envOf = (deployment: Obj) =>
  Object.fromEntries(
    deployment.spec.template.spec.containers[0].env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]),
  );

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'rollplane-deploy-ha-'));
  sim = await startSimulator({ delays: zeroDelays, kubeconfigPath: path.join(dir, 'kubeconfig') });
  rendered = parse((await run(KUBECTL, ['kustomize', HA], { timeout: 60_000 })).stdout);
  single = parse((await run(KUBECTL, ['kustomize', DEPLOY], { timeout: 60_000 })).stdout);
}, 60_000);

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('deploy/ha (kustomize overlay: three replicas on PostgreSQL)', () => {
  it('holds the single-replica install but its SQLite volume, with the same image', () => {
    const kinds = (objects: Obj[]) => objects.map((m) => `${m.kind}/${m.metadata.name}`).sort();
    expect(kinds(rendered)).toEqual(kinds([...single.filter((m) => m.kind !== 'PersistentVolumeClaim'), only(rendered, 'PodDisruptionBudget')]));
    expect(only(rendered, 'Deployment').spec.template.spec.containers[0].image).toBe(only(single, 'Deployment').spec.template.spec.containers[0].image);
  });

  it('runs three replicas, spread over nodes, replaced one at a time, with no volume for data', () => {
    const deployment = only(rendered, 'Deployment');
    const pod = deployment.spec.template.spec;
    const labels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    const terms = pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
    expect(terms).toHaveLength(1);
    expect(terms[0].podAffinityTerm).toEqual({ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: labels } });

    expect(rendered.filter((m) => m.kind === 'PersistentVolumeClaim')).toEqual([]);
    expect(pod.volumes.filter((v: { persistentVolumeClaim?: unknown }) => v.persistentVolumeClaim)).toEqual([]);
    const container = pod.containers[0];
    const volumes = new Set(pod.volumes.map((v: { name: string }) => v.name));
    for (const mount of container.volumeMounts) expect(volumes.has(mount.name), mount.mountPath).toBe(true);
    expect(container.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(['/tmp']);
  });

  it('reads DATABASE_URL from a Secret it does not ship, so applying it again never overwrites the real one', () => {
    const env = envOf(only(rendered, 'Deployment'));
    expect(env.DATABASE_URL).toEqual({ secretKeyRef: { name: 'rollplane-database', key: 'url' } });
    expect(rendered.filter((m) => m.kind === 'Secret')).toEqual([]);
    // Everything else is the single-replica install's: leader election on, authentication on, the same probes.
    const base = only(single, 'Deployment');
    const { DATABASE_URL: _ha, ...rest } = env;
    const { DATABASE_URL: _single, ...baseRest } = envOf(base);
    expect(rest).toEqual(baseRest);
    expect(env.ROLLPLANE_LEADER_ELECT ?? 'true').toBe('true');
    const container = only(rendered, 'Deployment').spec.template.spec.containers[0];
    for (const field of ['image', 'ports', 'startupProbe', 'livenessProbe', 'readinessProbe', 'resources', 'securityContext']) {
      expect(container[field], field).toEqual(base.spec.template.spec.containers[0][field]);
    }
  });

  it("lets a disruption take at most one replica, and selects exactly the Deployment's pods", () => {
    const pdb = only(rendered, 'PodDisruptionBudget');
    const deployment = only(rendered, 'Deployment');
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(pdb.spec.maxUnavailable).toBeLessThan(deployment.spec.replicas);
    for (const m of rendered) {
      if (['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(m.kind)) expect(m.metadata.namespace).toBeUndefined();
      else expect(m.metadata.namespace, `${m.kind}/${m.metadata.name}`).toBe('rollplane-system');
    }
  });

  it('is accepted by kubectl apply -k deploy/ha, and a second apply changes nothing', async () => {
    const out = await kubectl('apply', '-k', HA);
    for (const m of rendered) expect(out).toMatch(new RegExp(`${m.kind.toLowerCase()}[^ ]*/${m.metadata.name} created`));
    const pdb = JSON.parse(await kubectl('get', 'pdb', 'rollplane', '-n', 'rollplane-system', '-o', 'json')) as Obj;
    expect(pdb.spec).toMatchObject({ maxUnavailable: 1 });
    const deployment = JSON.parse(await kubectl('get', 'deployment', 'rollplane', '-n', 'rollplane-system', '-o', 'json')) as Obj;
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.template.spec.affinity).toEqual(only(rendered, 'Deployment').spec.template.spec.affinity);
    // A second apply changes nothing. kubectl still sends (and reports "configured" for) the PodDisruptionBudget: its
    // selector's patch strategy is `replace`, so the computed patch is never empty (as against a real API server); the
    // object stays as rendered.
    const again = await kubectl('apply', '-k', HA);
    expect(again).not.toMatch(/ created$/m);
    expect(again.split('\n').filter((line) => line.endsWith(' configured'))).toEqual(['poddisruptionbudget.policy/rollplane configured']);
    expect(again.match(/ unchanged$/gm)).toHaveLength(rendered.length - 1);
    const pdbAgain = JSON.parse(await kubectl('get', 'pdb', 'rollplane', '-n', 'rollplane-system', '-o', 'json')) as Obj;
    expect(pdbAgain.spec).toEqual(only(rendered, 'PodDisruptionBudget').spec);
  });
});
