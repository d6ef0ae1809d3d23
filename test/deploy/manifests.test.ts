import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SETTINGS } from '../../src/config.js';
import { zeroDelays } from '../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { projectRoot } from '../helpers/child.js';

/** deploy/ applied with kubectl to the simulator, read back, and checked for consistency between its objects. */

const run = promisify(execFile);
const KUBECTL = process.env.KUBECTL ?? 'kubectl';
const DEPLOY = path.join(projectRoot, 'deploy');

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [key: string]: any };

let sim: Simulator;
let dir: string;
let manifests: Obj[];

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(KUBECTL, ['--kubeconfig', sim.kubeconfigPath, '--cache-dir', path.join(dir, 'cache'), ...args], { timeout: 60_000 });
  return stdout;
}

const one = (kind: string) => {
  const found = manifests.filter((m) => m.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'rollplane-deploy-'));
  sim = await startSimulator({ delays: zeroDelays, kubeconfigPath: path.join(dir, 'kubeconfig') });
  const files = (await readdir(DEPLOY)).filter((f) => /\.ya?ml$/.test(f)).sort();
  manifests = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(path.join(DEPLOY, file), 'utf8'))) manifests.push(doc.toJS() as Obj);
  }
}, 30_000);

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('deploy/ manifests', () => {
  it('are accepted by kubectl apply -f deploy/ and read back as written', async () => {
    const out = await kubectl('apply', '-f', DEPLOY);
    for (const m of manifests) expect(out).toMatch(new RegExp(`${m.kind.toLowerCase()}[^ ]*/${m.metadata.name} created`));

    for (const m of manifests) {
      const args = ['get', `${m.kind}.${m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : ''}`.replace(/\.$/, ''), m.metadata.name, '-o', 'json'];
      const back = JSON.parse(await kubectl(...args, ...(m.metadata.namespace ? ['-n', m.metadata.namespace] : []))) as Obj;
      expect(back.metadata.labels ?? {}).toMatchObject(m.metadata.labels ?? {});
      for (const field of ['rules', 'roleRef', 'subjects', 'type']) if (m[field] !== undefined) expect(back[field], `${m.kind} ${field}`).toEqual(m[field]);
      if (m.kind === 'Secret') {
        expect(back.data).toEqual(m.data);
      }
      if (m.kind === 'Deployment') expect(back.spec.template.spec.containers[0].env).toEqual(m.spec.template.spec.containers[0].env);
      if (m.kind === 'ServiceMonitor') expect(back.spec).toEqual(m.spec);
      if (m.kind === 'Service') expect(back.spec.ports[0]).toMatchObject(m.spec.ports[0]);
    }

    // A second apply changes nothing: the server kept exactly what was sent.
    const again = await kubectl('apply', '-f', DEPLOY);
    expect(again).not.toMatch(/ (created|configured)$/m);
    expect(again.match(/ unchanged$/gm)).toHaveLength(manifests.length);
  });

  it('put everything namespaced in rollplane-system', () => {
    for (const m of manifests) {
      if (['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(m.kind)) expect(m.metadata.namespace).toBeUndefined();
      else expect(m.metadata.namespace, `${m.kind}/${m.metadata.name}`).toBe('rollplane-system');
    }
  });

  it('wire the Deployment to the service account, Secret, volume, Service and ServiceMonitor', () => {
    const deployment = one('Deployment');
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(pod.serviceAccountName).toBe(one('ServiceAccount').metadata.name);
    expect(deployment.spec.selector.matchLabels).toEqual(expect.objectContaining(deployment.spec.template.metadata.labels));
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy.type).toBe('Recreate');

    const env = Object.fromEntries(container.env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]));
    expect(env).toMatchObject({ ROLLPLANE_KUBE: 'in-cluster', HOST: '0.0.0.0', ROLLPLANE_AUTH: 'on' });
    const known = new Set(SETTINGS.map((s) => s.env));
    // Besides rollplane's settings, only Node's own NODE_OPTIONS (the heap cap that fits the container's memory limit)
    // and NODE_ENV (production: graphql-js's development-mode checks cost CPU on every query).
    for (const name of Object.keys(env))
      expect(known.has(name) || ['LOG_FORMAT', 'NODE_OPTIONS', 'NODE_ENV'].includes(name), `${name} is a rollplane setting`).toBe(true);
    expect(env.NODE_OPTIONS).toMatch(/--max-old-space-size=\d+/);
    expect(env.NODE_ENV).toBe('production');
    const secret = one('Secret');
    expect(env.ROLLPLANE_ADMIN_TOKEN).toEqual({ secretKeyRef: { name: secret.metadata.name, key: Object.keys(secret.data)[0] } });

    const dataMount = container.volumeMounts.find((v: { mountPath: string }) => env.DATABASE_URL === `file:${v.mountPath}/rollplane.db`);
    expect(dataMount).toBeDefined();
    const volume = pod.volumes.find((v: { name: string }) => v.name === dataMount.name);
    expect(volume.persistentVolumeClaim.claimName).toBe(one('PersistentVolumeClaim').metadata.name);

    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    const portName = container.ports[0].name;
    expect(container.ports[0].containerPort).toBe(Number(env.PORT));

    const service = one('Service');
    expect(service.spec.selector).toEqual(deployment.spec.template.metadata.labels);
    expect(service.spec.ports[0].targetPort).toBe(portName);
    const monitor = one('ServiceMonitor');
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: service.spec.ports[0].name, path: '/metrics' });
  });

  it('ship an admin token placeholder that rollplane refuses, so nobody runs with a known token', async () => {
    const { loadConfig } = await import('../../src/config.js');
    expect(() =>
      loadConfig({ ROLLPLANE_ADMIN_TOKEN: Buffer.from(one('Secret').data.token, 'base64').toString(), HOST: '0.0.0.0', ROLLPLANE_AUTH: 'on' }, []),
    ).toThrow(/ROLLPLANE_ADMIN_TOKEN/);
  });
});
