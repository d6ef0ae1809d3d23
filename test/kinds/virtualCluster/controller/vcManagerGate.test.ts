/**
 * rollplane beside the simulated CAPN vc-manager (ADR 0018): gate off, rollplane upgrades and leaves a PKI the
 * vc-manager can read; gate on, rollplane leaves opted-in clusters to the vc-manager, so nothing is upgraded twice.
 */
import { createPrivateKey } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { gateFromArgs } from '../../../../src/kinds/virtualCluster/controller/vcManagerGate.js';
import { Resources } from '../../../../src/sim/store/resources.js';
import type { KubeObject } from '../../../../src/sim/types.js';
import { startHarness, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const GATE = '--feature-gates=ClusterVersionPartialUpgrade=true';
const PROGRESS = 'rollplane.io/upgrade-progress';

/** Sets the vc-manager Deployment's args, as `kubectl edit` would (a restart of the manager). */
function setGate(h: Harness, on: boolean): void {
  const d = structuredClone(h.sim.store.get(Resources.deployments, 'vc-manager', 'vc-manager')!);
  const container = d.spec.template.spec.containers[0];
  container.args = [...container.args.filter((a: string) => !a.startsWith('--feature-gates')), ...(on ? [GATE] : [])];
  h.sim.store.update(Resources.deployments, d);
}

const completed = (vc: KubeObject) => (vc.status.conditions as { reason: string }[]).filter((c) => c.reason === 'TenantControlPlaneUpgradeCompleted');

describe('the vc-manager gate, read from its Deployment args', () => {
  it.each([
    [['--disable-stacktrace=true', '--enable-webhook=true'], false],
    [['--feature-gates=ClusterVersionPartialUpgrade=true'], true],
    [['--feature-gates', 'Other=true,ClusterVersionPartialUpgrade=True'], true],
    [['--feature-gates=ClusterVersionPartialUpgrade=false'], false],
    // Go's flag package calls MapStringBool.Set once per occurrence: every occurrence adds to one map (it was read as
    // "the last flag wins", so this was off), and a later pair for the same key wins.
    [['--feature-gates=ClusterVersionPartialUpgrade=true', '--feature-gates=Other=true'], true],
    [['--feature-gates=SuperClusterLabelling=true', '--feature-gates=ClusterVersionPartialUpgrade=1'], true],
    [['--feature-gates=A=true', '--feature-gates=ClusterVersionPartialUpgrade=1'], true], // the example
    [['--feature-gates=ClusterVersionPartialUpgrade=true', '--feature-gates=ClusterVersionPartialUpgrade=false'], false],
    [['-feature-gates', 'ClusterVersionPartialUpgrade=t'], true],
    [['--feature-gates=ClusterVersionPartialUpgrade=TRUE'], true],
    [['--feature-gates=ClusterVersionPartialUpgrade=yes'], false], // not a strconv.ParseBool spelling: the flag is refused
    [['--', '--feature-gates=ClusterVersionPartialUpgrade=true'], false], // after `--`: not a flag
  ])('%j → %s', (args, on) => {
    expect(gateFromArgs(args)).toBe(on);
  });
});

describe('rollplane beside the vc-manager', () => {
  it('gate off: rollplane upgrades; gate on: the vc-manager upgrades with the root CA rollplane left, and rollplane does not upgrade again', async () => {
    h = await startHarness({ sim: { upstream: { vcManager: {} }, upstreamTiming: { vcManager: { pollMs: 20 } } } });
    expect(h.runtime.queries.upstreamUpgrades?.()).toBeUndefined();

    // 1. Gate off (upstream's default): rollplane upgrades.
    h.editClusterVersion((spec) => {
      spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=4'];
    });
    h.optIn('vc-1');
    expect((await h.upgradeEnded('vc-1')).status.reason).toBe('TenantControlPlaneUpgradeCompleted');
    expect(await h.observed(1)).toHaveLength(1);
    const rootAfterRollplane = h.controlPlane('vc-1', 'secrets', 'root-ca')!.data as Record<string, string>;
    expect(createPrivateKey({ key: Buffer.from(rootAfterRollplane['tls.key'], 'base64').toString(), format: 'pem', type: 'pkcs1' }).asymmetricKeyType).toBe(
      'rsa',
    );

    // 2. Gate on: bumps are refused with a message naming the Deployment and the flag; the reconciler defers.
    setGate(h, true);
    const reason = await h.waitFor('the gate to be seen', () => h!.runtime.queries.upstreamUpgrades?.());
    expect(reason).toContain('vc-manager/vc-manager');
    expect(reason).toContain(GATE);
    const seen = new Set<string>();
    const unsubscribe = h.sim.store.subscribe((event) => {
      const o = event.object as KubeObject;
      if (o.kind === 'VirtualCluster' && o.metadata.annotations?.[PROGRESS]) seen.add(o.metadata.name!);
    });
    const rv = h.editClusterVersion((spec) => {
      spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=5'];
    });
    h.optIn('vc-1');
    const byVcManager = await h.upgradeEnded('vc-1');
    unsubscribe();
    // The vc-manager read rollplane's root-ca (PKCS#1 RSA) and completed; it kept the root.
    expect([byVcManager.status.reason, byVcManager.status.message]).toEqual(['TenantControlPlaneUpgradeCompleted', 'tenant control plane is upgraded']);
    expect(byVcManager.metadata.labels?.['tenancy.x-k8s.io/cluster-version-applied']).toBe(rv);
    expect(h.controlPlane('vc-1', 'secrets', 'root-ca')!.data).toEqual(rootAfterRollplane);
    expect(h.controlPlane('vc-1', 'statefulsets', 'apiserver')!.spec.template.spec.containers[0].args).toEqual(['-v=5']);
    // rollplane did not start an upgrade of its own, and recorded none.
    expect(seen.size).toBe(0);
    expect(await h.observations()).toHaveLength(1);
    expect(completed(byVcManager)).toHaveLength(1); // refreshed by reason, not appended again

    // 3. Gate off again: rollplane upgrades, and keeps the pod-template label the vc-manager's apply set.
    setGate(h, false);
    await h.waitFor('the gate to be off', () => h!.runtime.queries.upstreamUpgrades?.() === undefined);
    const clusterNs = byVcManager.status.clusterNamespace;
    expect(h.controlPlane('vc-1', 'statefulsets', 'apiserver')!.spec.template.metadata.labels['tenancy.x-k8s.io/cluster']).toBe(clusterNs);
    h.editClusterVersion((spec) => {
      spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=6'];
    });
    h.optIn('vc-1');
    const again = await h.upgradeEnded('vc-1');
    expect(again.status.reason).toBe('TenantControlPlaneUpgradeCompleted');
    expect(await h.observed(2)).toHaveLength(2);
    for (const sts of ['apiserver', 'controller-manager']) {
      expect(h.controlPlane('vc-1', 'statefulsets', sts)!.spec.template.metadata.labels['tenancy.x-k8s.io/cluster'], sts).toBe(clusterNs);
    }
    expect(completed(again)).toHaveLength(1);
  }, 180_000); // three upgrades with RSA keys on a busy machine

  it('with ECDSA keys (the explicit choice) the vc-manager cannot read the root CA rollplane generated, as the warning says', async () => {
    h = await startHarness({ sim: { upstream: { vcManager: {} }, upstreamTiming: { vcManager: { pollMs: 20 } } }, vcluster: { keyAlgorithm: 'ecdsa-p256' } });
    h.editClusterVersion((spec) => {
      spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=4'];
    });
    h.optIn('vc-1');
    expect((await h.upgradeEnded('vc-1')).status.reason).toBe('TenantControlPlaneUpgradeCompleted');
    expect(Buffer.from((h.controlPlane('vc-1', 'secrets', 'root-ca')!.data as Record<string, string>)['tls.key']!, 'base64').toString()).toMatch(
      /^-----BEGIN EC PRIVATE KEY-----/,
    );
    setGate(h, true);
    await h.waitFor('the gate to be seen', () => h!.runtime.queries.upstreamUpgrades?.());
    h.editClusterVersion((spec) => {
      spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=5'];
    });
    h.optIn('vc-1');
    const failed = await h.upgradeEnded('vc-1');
    expect(failed.status.reason).toBe('TenantControlPlaneUpgradeFailed');
    expect(failed.status.message).toContain('ParseECPrivateKey');
  });
});
