import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/sim/types.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { MEMBER_FLEET_ENV, registerMembers } from '../helpers/memberFleet.js';
import { until } from '../helpers/until.js';

/**
 * `MemberCluster.kindFigures` over HTTP against the real server (`local`, simulated, plus one simulated member driven
 * by its own runtime, docs/adr/0055): each kind's versions with counts and drifted count read from the member's
 * caches; after a "helm upgrade" of the member's vm-dhcp-controller every pool drifts; with the member cut off its
 * figures are null and say why, while `local`'s are still answered.
 */
const MEMBER = 'edge-1';
const CONTROLLER = { namespace: 'harvester-system', name: 'harvester-vm-dhcp-controller' };
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const QUERY = '{ clusters { name kindFigures { kind versions { version count } drifted unavailable } } }';

interface Figures {
  kind: string;
  versions: { version: string | null; count: number }[] | null;
  drifted: number | null;
  unavailable: string | null;
}

describe('MemberCluster.kindFigures', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane cluster figures '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: [{ name: MEMBER, fleet: 'pools=3,nodes=2,upstream=vm-dhcp' }] });
    registerMembers(dir, fleet, [MEMBER], () => ({ tier: 'edge' }));
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=2,nodes=1' } });
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function figures(): Promise<Record<string, Figures[]>> {
    const res = await gql(app.url, QUERY);
    expect(res.errors).toBeUndefined();
    return Object.fromEntries(res.data.clusters.map((c: { name: string; kindFigures: Figures[] }) => [c.name, c.kindFigures]));
  }
  /** Someone else sets the member's vm-dhcp-controller --image (existing agents keep running the old one). */
  function helmUpgrade(image: string): void {
    const sim = fleet.clusters.get(MEMBER)!.simulator;
    const type = sim.store.resourceType('apps', 'deployments')!;
    const d = structuredClone(sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name)!) as KubeObject;
    const args: string[] = d.spec.template.spec.containers[0].args;
    args[args.indexOf('--image') + 1] = image;
    sim.store.update(type, d);
  }
  const agentPools = (all: Record<string, Figures[]>, cluster: string) => all[cluster]?.find((f) => f.kind === 'AGENT_POOL');

  it("answers each cluster's versions and drift from its caches, and says why when a member's are not there", async () => {
    await until('the member driven by its own runtime', () =>
      app.memberRuntimes?.snapshot().some((r) => r.cluster === MEMBER && r.running && r.kinds.includes('AGENT_POOL')),
    );
    const first = await figures();
    expect(agentPools(first, MEMBER)).toEqual({ kind: 'AGENT_POOL', versions: [{ version: OLD, count: 3 }], drifted: 0, unavailable: null });
    expect(agentPools(first, 'local')).toEqual({ kind: 'AGENT_POOL', versions: [{ version: OLD, count: 2 }], drifted: 0, unavailable: null });
    expect(first[MEMBER]!.map((f) => f.kind)).toEqual(['AGENT_POOL', 'NODE_AGENT', 'VIRTUAL_CLUSTER']);

    // The "helm upgrade" in the member: its controller's --image changes, the agents still run the old one.
    helmUpgrade(NEW);
    const drifted = await until('the member pools drifted', async () => {
      const pools = agentPools(await figures(), MEMBER);
      return pools?.drifted === 3 ? pools : undefined;
    });
    expect(drifted.versions).toEqual([{ version: OLD, count: 3 }]);
    // Counted as the drift query counts them (it reads local alone).
    expect(agentPools(await figures(), 'local')?.drifted).toBe(0);

    // Cut off: the member's caches are not available; its figures are null and say why, local's are still answered.
    await fleet.set(MEMBER, 'blackhole');
    const cut = await until('the member unavailable', async () => {
      const all = await figures();
      return agentPools(all, MEMBER)?.unavailable ? all : undefined;
    });
    expect(agentPools(cut, MEMBER)).toMatchObject({ versions: null, drifted: null, unavailable: expect.stringContaining(MEMBER) });
    expect(agentPools(cut, 'local')).toMatchObject({ versions: [{ version: OLD, count: 2 }], unavailable: null });
  });
});
