/**
 * Everything rollplane writes to IPPools, VirtualClusters and ClusterVersions passes the upstream CRD schemas in
 * ../shared/upstream with nothing pruned (issue 14), checked two ways (see test/helpers/upstreamSchemas.ts): what is
 * stored after a representative scenario, and what rollplane sent, recorded by a proxy between it and the simulator.
 */
import { afterEach, expect, it } from 'vitest';
import { writeKubeconfig } from '../../src/sim/kubeconfig.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import type { KubeObject } from '../../src/sim/types.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import {
  describeFindings,
  dumpUpstreamObjects,
  expectNothingPruned,
  prunedInWrites,
  startRecordingProxy,
  type RecordingProxy,
} from '../helpers/upstreamSchemas.js';
import { describeWithUpstream, upstreamCrd } from '../helpers/upstreamCrds.js';
import { until as waitUntil } from '../helpers/until.js';

const DELAYS = { podScheduleMs: 0, podStartMs: 5, podReadyMs: 10, podTerminateMs: 5, controllerMs: 0 };
const TERMINAL = ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'];

let sim: Simulator | undefined;
let proxy: RecordingProxy | undefined;
let app: TestApp | undefined;
afterEach(async () => {
  await app?.close();
  await proxy?.close();
  await sim?.stop();
  app = undefined;
  proxy = undefined;
  sim = undefined;
});

/** Rollouts on the demo fleet take a while on a loaded machine. */
const until = <T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false) => waitUntil(what, check, 60_000);

async function finished(id: string): Promise<string> {
  return until(`rollout ${id} to end`, async () => {
    const r = await gql(app!.url, 'query ($id: ID!) { rollout(id: $id) { state } }', { id });
    const state = r.data?.rollout?.state as string | undefined;
    return state && TERMINAL.includes(state) ? state : undefined;
  });
}

describeWithUpstream('upstream schema dump', () => {
  it('after agent-pool and virtual-cluster rollouts on the demo fleet, nothing stored or sent by rollplane is pruned or invalid', async () => {
    sim = await startSimulator({ fleet: 'demo', delays: DELAYS });
    proxy = await startRecordingProxy(sim.url);
    const kubeconfig = await writeKubeconfig({ server: proxy.url });
    app = await startTestApp({ env: { ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: kubeconfig, ROLLPLANE_CONTROLLERS: 'on', ROLLPLANE_LEADER_ELECT: 'false' } });

    const pools = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: 'rancher/harvester-vm-dhcp-agent:v0.3.1' },
    });
    expect(pools.errors, JSON.stringify(pools.errors)).toBeUndefined();
    const clusters = await gql(app.url, 'mutation ($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { rollout { id } } }', {
      input: { clusterVersion: 'cv-sample-np', apiServer: { args: ['-v=7'] }, maxConcurrent: 2 },
    });
    expect(clusters.errors, JSON.stringify(clusters.errors)).toBeUndefined();
    expect(await finished(pools.data.bumpAgentImage.rollout.id)).toBe('SUCCEEDED');
    expect(await finished(clusters.data.bumpClusterVersion.rollout.id)).toBe('SUCCEEDED');

    const dump = await expectNothingPruned(sim.kubeConfig);
    expect(dump.objects.get('network.harvesterhci.io/ippools')).toHaveLength(3);
    expect(dump.objects.get('tenancy.x-k8s.io/virtualclusters')).toHaveLength(2);
    expect(dump.objects.get('tenancy.x-k8s.io/clusterversions')).toHaveLength(1);
    expect(describeFindings(dump.findings)).toEqual([]);

    // rollplane did write these kinds (the check is not vacuous), and nothing it sent was pruned.
    const kinds = new Set(proxy.writes.map((w) => w.kind));
    expect(kinds).toContain('network.harvesterhci.io/ippools');
    expect(kinds).toContain('tenancy.x-k8s.io/virtualclusters');
    expect(kinds).toContain('tenancy.x-k8s.io/clusterversions');
    expect(describeFindings(prunedInWrites(proxy.writes))).toEqual([]);
  }, 120_000);

  it('names each field a write sends that upstream prunes, even though the strict simulator stores the object clean', async () => {
    sim = await startSimulator({ fleet: 'pools=1', delays: DELAYS });
    proxy = await startRecordingProxy(sim.url);
    const path = '/apis/network.harvesterhci.io/v1alpha1/namespaces/default/ippools/net-1/status';
    // The Deployment-mode reference of issue 14: not in the CRD, so a real API server drops it (with a warning).
    const response = await fetch(`${proxy.url}${path}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json', authorization: 'Bearer t' },
      body: JSON.stringify({ status: { agentDeploymentRef: { namespace: 'harvester-system', name: 'net-1-agent' }, lastUpdate: '2026-12-01T00:00:00Z' } }),
    });
    expect(response.status).toBe(200);
    const json = [{ op: 'add', path: '/spec/ipv4Config/extra', value: 1 }];
    const patched = await fetch(`${proxy.url}/apis/network.harvesterhci.io/v1alpha1/namespaces/default/ippools/net-1`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json-patch+json', authorization: 'Bearer t' },
      body: JSON.stringify(json),
    });
    expect(patched.status).toBe(200);

    const findings = prunedInWrites(proxy.writes);
    expect(findings.filter((f) => f.detail === undefined).map((f) => f.path)).toEqual(['status.agentDeploymentRef', 'spec.ipv4Config.extra']);
    expect(findings.filter((f) => f.detail === 'server warning').map((f) => f.path)).toEqual([
      '"unknown field \\"status.agentDeploymentRef\\""',
      '"unknown field \\"spec.ipv4Config.extra\\""',
    ]);
    // What is stored is clean: on a strict API server only the request shows the loss.
    expect((await dumpUpstreamObjects({ server: sim.url })).findings).toEqual([]);
  });

  it('names each stored field upstream would prune or reject when the cluster serves a looser CRD than upstream', async () => {
    sim = await startSimulator({ fleet: 'clusters=1,nodes=1', delays: DELAYS });
    // A drifted CRD: the VirtualCluster schema with status left open (preserve-unknown-fields) and spec untyped.
    const upstream = upstreamCrd('virtualclusters.tenancy.x-k8s.io').crd;
    const loose = structuredClone(upstream) as KubeObject;
    const version = loose.spec.versions.find((v: { storage: boolean }) => v.storage);
    version.schema.openAPIV3Schema.properties.status = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    version.schema.openAPIV3Schema.properties.spec = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    const crds = sim.store.resourceType('apiextensions.k8s.io', 'customresourcedefinitions')!;
    const current = sim.store.get(crds, undefined, 'virtualclusters.tenancy.x-k8s.io')!;
    sim.store.update(crds, { ...loose, metadata: { ...current.metadata } });
    const vcs = sim.store.resourceType('tenancy.x-k8s.io', 'virtualclusters')!;
    const vc = structuredClone(sim.store.get(vcs, 'default', 'vc-1')!);
    vc.status = { ...vc.status, upgradedBy: 'rollplane' };
    vc.spec = { ...vc.spec, clusterVersionName: 42 };
    sim.store.update(vcs, vc);

    await expect(expectNothingPruned(sim.kubeConfig)).rejects.toThrow(/VirtualCluster default\/vc-1: status\.upgradedBy pruned/);
    const dump = await dumpUpstreamObjects({ server: sim.url });
    const lines = describeFindings(dump.findings);
    expect(lines).toContain('VirtualCluster default/vc-1: status.upgradedBy pruned');
    expect(lines.some((l) => l.startsWith('VirtualCluster default/vc-1: spec.clusterVersionName invalid'))).toBe(true);
    expect(lines).toHaveLength(2);
  });
});
