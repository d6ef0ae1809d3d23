import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';

/** kubectl, the independent client, against a CRD with several served versions (conversion None). */
const run = promisify(execFile);
const KUBECTL = process.env.KUBECTL ?? 'kubectl';

let sim: Simulator;
let dir: string;

async function kubectlOut(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(KUBECTL, ['--kubeconfig', sim.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000 });
}

async function kubectl(...args: string[]): Promise<string> {
  return (await kubectlOut(...args)).stdout;
}

async function kubectlFails(...args: string[]): Promise<string> {
  return kubectl(...args).then(
    (out) => {
      throw new Error(`expected kubectl ${args.join(' ')} to fail, it printed: ${out}`);
    },
    (error: { stderr?: string }) => error.stderr ?? '',
  );
}

async function manifest(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

const schema = (spec: string) => `
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
${spec}`;

const CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sprockets.example.net}
spec:
  group: example.net
  scope: Namespaced
  names: {kind: Sprocket, plural: sprockets, shortNames: [spr]}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
${schema('              teeth: {type: integer}')}
  - name: v1beta1
    served: true
    storage: false
${schema(`              teeth: {type: integer, maximum: 40}
              finish: {type: string, default: matte}`)}
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Teeth, type: integer, jsonPath: .spec.teeth}
${schema(`              teeth: {type: integer}
              finish: {type: string}`)}
  - name: v2
    served: false
    storage: false
${schema('              teeth: {type: integer}')}
`;

const sprocket = (version: string, name: string, spec: string) => `
apiVersion: example.net/${version}
kind: Sprocket
metadata: {name: ${name}, namespace: default}
spec: {${spec}}
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sim-crd-versions-kubectl-'));
  sim = await startSimulator({ behaviour: false, kubeconfigPath: join(dir, 'kubeconfig') });
  expect(await kubectl('apply', '-f', await manifest('crd.yaml', CRD))).toContain(
    'customresourcedefinition.apiextensions.k8s.io/sprockets.example.net created',
  );
});

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('kubectl and a CRD with several served versions', () => {
  it('lists every served version in api-versions, and resolves the preferred one by default', async () => {
    const versions = (await kubectl('api-versions')).split('\n');
    expect(versions).toEqual(expect.arrayContaining(['example.net/v1', 'example.net/v1beta1', 'example.net/v1alpha1']));
    expect(versions).not.toContain('example.net/v2');
    expect(await kubectl('api-resources', '--api-group=example.net')).toMatch(/sprockets\s+spr\s+example\.net\/v1\s+true\s+Sprocket/);
  });

  it('applies an object in a non-storage version, with that version’s default, and reads it in any version', async () => {
    expect(await kubectl('apply', '-f', await manifest('beta.yaml', sprocket('v1beta1', 'sp1', 'teeth: 12')))).toContain('sprocket.example.net/sp1 created');
    const stored = sim.store.get(sim.store.resourceType('example.net', 'sprockets')!, 'default', 'sp1')!;
    expect(stored.apiVersion).toBe('example.net/v1');
    expect(stored.spec).toEqual({ teeth: 12, finish: 'matte' });
    const beta = JSON.parse(await kubectl('get', 'sprockets.v1beta1.example.net', 'sp1', '-n', 'default', '-o', 'json'));
    expect(beta.apiVersion).toBe('example.net/v1beta1');
    const v1 = JSON.parse(await kubectl('get', 'sprockets.v1.example.net', 'sp1', '-n', 'default', '-o', 'json'));
    expect(v1.apiVersion).toBe('example.net/v1');
    // The preferred version, with its printer columns.
    expect(await kubectl('get', 'spr', '-n', 'default')).toMatch(/NAME\s+TEETH\s*\nsp1\s+12\s*\n/);
    // Applied again unchanged, through its own version: nothing to do.
    expect(await kubectl('apply', '-f', join(dir, 'beta.yaml'))).toContain('sprocket.example.net/sp1 unchanged');
  });

  it('explains each version from its own OpenAPI document', async () => {
    expect(await kubectl('explain', 'sprockets.spec', '--api-version=example.net/v1beta1')).toMatch(/VERSION:\s+v1beta1[\s\S]*finish\s+<string>/);
    const alpha = await kubectl('explain', 'sprockets.spec', '--api-version=example.net/v1alpha1');
    expect(alpha).toMatch(/VERSION:\s+v1alpha1/);
    expect(alpha).toMatch(/teeth\s+<integer>/);
    expect(alpha).not.toContain('finish');
  });

  it('refuses through a version what only that version’s schema forbids, naming the field', async () => {
    const stderr = await kubectlFails('apply', '-f', await manifest('bad.yaml', sprocket('v1beta1', 'sp-bad', 'teeth: 50')));
    expect(stderr).toContain('The Sprocket "sp-bad" is invalid: spec.teeth: Invalid value: 50: spec.teeth in body should be less than or equal to 40');
    expect(await kubectl('apply', '-f', await manifest('good.yaml', sprocket('v1', 'sp-bad', 'teeth: 50')))).toContain('sprocket.example.net/sp-bad created');
  });

  it('prints the deprecation warning for a deprecated version, and refuses a version that is not served', async () => {
    const { stdout, stderr } = await kubectlOut('get', 'sprockets.v1alpha1.example.net', 'sp1', '-n', 'default', '-o', 'json');
    expect(JSON.parse(stdout).apiVersion).toBe('example.net/v1alpha1');
    expect(stderr).toContain('Warning: example.net/v1alpha1 Sprocket is deprecated; use example.net/v1 Sprocket');
    const unserved = await kubectlFails('apply', '-f', await manifest('v2.yaml', sprocket('v2', 'sp2', 'teeth: 3')));
    expect(unserved).toMatch(/no matches for kind "Sprocket" in version "example\.net\/v2"/);
  });
});
