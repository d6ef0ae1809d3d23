import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { Resources } from '../../../src/sim/store/resources.js';
import { describeWithUpstream, upstreamCrd, upstreamCrds } from '../../helpers/upstreamCrds.js';

const run = promisify(execFile);
const KUBECTL = process.env.KUBECTL ?? 'kubectl';

let sim: Simulator;
let dir: string;

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(KUBECTL, ['--kubeconfig', sim.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000 });
  return stdout;
}

/** stderr of a kubectl call that must fail. */
async function kubectlFails(...args: string[]): Promise<string> {
  return kubectl(...args).then(
    (out) => {
      throw new Error(`expected kubectl ${args.join(' ')} to fail, it printed: ${out}`);
    },
    (error: { stderr?: string }) => error.stderr ?? '',
  );
}

const pool = (extra: string) => `
apiVersion: network.harvesterhci.io/v1alpha1
kind: IPPool
metadata: {name: pool-k, namespace: default}
spec:
  networkName: default/net-k
  ipv4Config:
    cidr: 172.16.0.0/24
    serverIP: 172.16.0.2
    pool: {start: 172.16.0.10, end: 172.16.0.250}
${extra}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sim-crd-kubectl-'));
  // A bare API: no CRDs until kubectl applies the upstream ones.
  sim = await startSimulator({ behaviour: false, crds: false, kubeconfigPath: join(dir, 'kubeconfig') });
});

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describeWithUpstream('kubectl and the upstream CRDs on an empty simulator', () => {
  it('serves no IPPools before their CRD is applied', async () => {
    expect(await kubectlFails('get', 'ippools', '-A')).toContain(`the server doesn't have a resource type "ippools"`);
  });

  it('applies each upstream CRD file with kubectl apply -f', async () => {
    const files = [...new Set(upstreamCrds().map((u) => u.path))];
    expect(files.length).toBe(3);
    for (const file of files) {
      const out = await kubectl('apply', '-f', file);
      expect(out).toMatch(/customresourcedefinition\.apiextensions\.k8s\.io\/\S+ created/);
    }
    const crds = await kubectl('get', 'crds');
    for (const name of ['ippools.network.harvesterhci.io', 'virtualclusters.tenancy.x-k8s.io', 'clusterversions.tenancy.x-k8s.io'])
      expect(crds).toContain(name);
    const established = parseYaml(await kubectl('get', 'crd', 'ippools.network.harvesterhci.io', '-o', 'yaml'));
    expect(established.status.conditions).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'Established', status: 'True' })]));
    expect(established.status.acceptedNames).toMatchObject({ kind: 'IPPool', plural: 'ippools', shortNames: ['ippl', 'ippls'] });
  });

  it('explains an IPPool field from the served schema', async () => {
    const out = await kubectl('explain', 'ippool.spec');
    expect(out).toContain('KIND:       IPPool');
    expect(out).toMatch(/ipv4Config\s+<Object>/);
    expect(out).toMatch(/networkName\s+<string> -required-/);
    expect(await kubectl('explain', 'ippool.spec.ipv4Config.pool')).toMatch(/start\s+<string> -required-/);
  });

  it('lists IPPools across namespaces, by plural and by short name, with the CRD printer columns', async () => {
    expect(await kubectl('apply', '-f', await manifest('valid.yaml', pool('')))).toContain('ippool.network.harvesterhci.io/pool-k created');
    await sim.store.update(
      Resources.ippools,
      {
        ...sim.store.get(Resources.ippools, 'default', 'pool-k')!,
        status: { ipv4: { available: 239, used: 2 }, conditions: [{ type: 'Registered', status: 'True' }] },
      },
      'status',
    );
    const list = await kubectl('get', 'ippools', '-A');
    expect(list.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+NETWORK\s+AVAILABLE\s+USED\s+REGISTERED\s+CACHEREADY\s+AGENTREADY\s+AGE/);
    expect(list).toMatch(/default\s+pool-k\s+default\/net-k\s+239\s+2\s+True\s+\S+/);
    expect(await kubectl('get', 'ippl', '-A')).toMatch(/default\s+pool-k/);
  });

  it('prunes an unknown field when kubectl is told not to validate, and it is gone when read back', async () => {
    const file = await manifest('unknown.yaml', pool('  shoeSize: 44\n'));
    // kubectl validates server-side (fieldValidation=Strict): the API refuses the unknown field...
    expect(await kubectlFails('apply', '-f', file)).toContain('unknown field "spec.shoeSize"');
    // ...and with validation off (Ignore) it accepts the object without the field, as a real API server does.
    expect(await kubectl('apply', '--validate=false', '-f', file)).toContain('ippool.network.harvesterhci.io/pool-k configured');
    const back = parseYaml(await kubectl('get', 'ippool', 'pool-k', '-n', 'default', '-o', 'yaml'));
    expect(back.spec.shoeSize).toBeUndefined();
    expect(back.spec.networkName).toBe('default/net-k');
  });

  it('refuses a wrong type with 422 and a message naming the field', async () => {
    const stderr = await kubectlFails('apply', '-f', await manifest('wrong.yaml', pool('  paused: "yes"\n').replace('pool-k', 'pool-w')));
    expect(stderr).toContain('The IPPool "pool-w" is invalid: spec.paused: Invalid value: "string": spec.paused in body must be of type boolean: "string"');
    expect(sim.store.get(Resources.ippools, 'default', 'pool-w')).toBeUndefined();
  });

  it('refuses a change to an immutable field (x-kubernetes-validations self == oldSelf)', async () => {
    const changed = pool('').replace('serverIP: 172.16.0.2', 'serverIP: 172.16.0.3');
    const stderr = await kubectlFails('apply', '-f', await manifest('immutable.yaml', changed));
    expect(stderr).toContain('spec.ipv4Config.serverIP: Invalid value: "string": ServerIP is immutable');
  });

  it('takes the type away with the CRD: its objects are deleted and the API no longer serves it', async () => {
    expect(await kubectl('delete', 'crd', 'ippools.network.harvesterhci.io')).toContain('deleted');
    expect(sim.store.registry.byGroupPlural('network.harvesterhci.io', 'ippools')).toBeUndefined();
    // kubectl answers from its discovery cache or asks the API, which no longer serves the collection (404).
    expect(await kubectlFails('get', 'ippools', '-A')).toMatch(
      /the server doesn't have a resource type "ippools"|\(NotFound\).*the server could not find the requested resource/,
    );
    // Re-applied, the CRD serves an empty collection: the old objects did not survive.
    await kubectl('apply', '-f', upstreamCrd('ippools.network.harvesterhci.io').path);
    expect(await kubectl('get', 'ippools', '-A', '-o', 'name')).toBe('');
  });
});

async function manifest(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}
