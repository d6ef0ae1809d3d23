import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SETTINGS } from '../../src/config.js';
import { zeroDelays } from '../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { projectRoot } from '../helpers/child.js';

/** `kubectl apply -k deploy`: rendered, dry-run, applied with strict validation to the simulator, read back, and checked for consistency between its objects. */

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

const render = async (folder: string) =>
  parseAllDocuments((await run(KUBECTL, ['kustomize', folder], { timeout: 60_000 })).stdout)
    .map((doc) => doc.toJS() as Obj)
    .filter(Boolean);

const one = (kind: string, objects = manifests) => {
  const found = objects.filter((m) => m.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'rollplane-deploy-'));
  sim = await startSimulator({ delays: zeroDelays, kubeconfigPath: path.join(dir, 'kubeconfig') });
  manifests = await render(DEPLOY);
}, 30_000);

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('deploy/ manifests', () => {
  it('pass a client-side dry run, are accepted by kubectl apply -k deploy with strict validation and read back as written', async () => {
    const dry = await kubectl('apply', '-k', DEPLOY, '--dry-run=client');
    for (const m of manifests) expect(dry).toMatch(new RegExp(`${m.kind.toLowerCase()}[^ ]*/${m.metadata.name} created \\(dry run\\)`));
    // --validate=strict: the API server refuses any field its schema does not know (server-side field validation).
    const out = await kubectl('apply', '-k', DEPLOY, '--validate=strict');
    for (const m of manifests) expect(out).toMatch(new RegExp(`${m.kind.toLowerCase()}[^ ]*/${m.metadata.name} created`));

    for (const m of manifests) {
      const args = ['get', `${m.kind}.${m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : ''}`.replace(/\.$/, ''), m.metadata.name, '-o', 'json'];
      const back = JSON.parse(await kubectl(...args, ...(m.metadata.namespace ? ['-n', m.metadata.namespace] : []))) as Obj;
      expect(back.metadata.labels ?? {}).toMatchObject(m.metadata.labels ?? {});
      for (const field of ['rules', 'roleRef', 'subjects', 'type']) if (m[field] !== undefined) expect(back[field], `${m.kind} ${field}`).toEqual(m[field]);
      if (m.kind === 'Deployment') expect(back.spec.template.spec.containers[0].env).toEqual(m.spec.template.spec.containers[0].env);
      if (m.kind === 'Service') expect(back.spec.ports[0]).toMatchObject(m.spec.ports[0]);
    }

    // A second apply, and a server-side dry run of it, change nothing: the server kept exactly what was sent.
    const again = await kubectl('apply', '-k', DEPLOY, '--validate=strict');
    expect(again).not.toMatch(/ (created|configured)$/m);
    expect(again.match(/ unchanged$/gm)).toHaveLength(manifests.length);
    const serverDry = await kubectl('apply', '-k', DEPLOY, '--dry-run=server');
    expect(serverDry.match(/ unchanged \(server dry run\)$/gm)).toHaveLength(manifests.length);
  });

  it('leave the ServiceMonitor to deploy/monitoring, which applies beside them', async () => {
    expect(manifests.filter((m) => m.kind === 'ServiceMonitor')).toEqual([]);
    const monitoring = await render(path.join(DEPLOY, 'monitoring'));
    const monitor = one('ServiceMonitor', monitoring);
    const service = one('Service');
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: service.spec.ports[0].name, path: '/metrics' });
    expect(await kubectl('apply', '-k', path.join(DEPLOY, 'monitoring'), '--validate=strict')).toMatch(/servicemonitor[^ ]*\/rollplane (created|unchanged)/);
  });

  it('put everything namespaced in rollplane-system', () => {
    for (const m of manifests) {
      if (['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(m.kind)) expect(m.metadata.namespace).toBeUndefined();
      else expect(m.metadata.namespace, `${m.kind}/${m.metadata.name}`).toBe('rollplane-system');
    }
  });

  it('wire the Deployment to the service account, volume and Service', () => {
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
  });

  it('read the admin token from an optional Secret they do not ship, so the first start prints one and re-applying never overwrites it', () => {
    const env = one('Deployment').spec.template.spec.containers[0].env as { name: string; valueFrom?: unknown }[];
    expect(env.find((e) => e.name === 'ROLLPLANE_ADMIN_TOKEN')?.valueFrom).toEqual({
      secretKeyRef: { name: 'rollplane-admin-token', key: 'token', optional: true },
    });
    expect(manifests.filter((m) => m.kind === 'Secret')).toEqual([]);
  });

  it("run the image of this version, and deploy/README.md's one command points both installs at another registry", async () => {
    const { version } = JSON.parse(await readFile(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string };
    expect(one('Deployment').spec.template.spec.containers[0].image).toBe(`rollplane:${version}`);

    const readme = await readFile(path.join(DEPLOY, 'README.md'), 'utf8');
    const command = readme.split('\n').find((line) => line.startsWith('sed -i ') && line.includes('deploy/base/kustomization.yaml'));
    expect(command, 'the sed line in deploy/README.md').toBeDefined();
    const copy = path.join(dir, 'repo');
    await cp(DEPLOY, path.join(copy, 'deploy'), { recursive: true });
    await run('sh', ['-c', command!], { cwd: copy });
    for (const folder of ['deploy', 'deploy/ha']) {
      const image = one('Deployment', await render(path.join(copy, folder))).spec.template.spec.containers[0].image;
      expect(image, folder).toBe(`registry.example.com/platform/rollplane:${version}`);
    }
  });
});
