import { KIND_CONTRACTS } from '../../../../src/kinds/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { AdmittedTarget } from '../../../../src/domain/ports.js';
import type { Rollout } from '../../../../src/domain/RolloutService.js';
import { clusterSpecVersion, type ClusterVersionChange } from '../../../../src/kinds/virtualCluster/plan.js';
import { Resources } from '../../../../src/sim/store/resources.js';
import { CV_NAME, startHarness, type Harness } from './harness.js';
import { defaultStrategy } from '../../../../src/domain/kinds/index.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function rolloutFor(h: Harness, edit: (spec: any) => void, extra: Partial<Rollout> = {}): Rollout {
  const previousSpec = structuredClone(h.cv().spec);
  const desiredSpec = structuredClone(previousSpec);
  edit(desiredSpec);
  const change: ClusterVersionChange = {
    name: CV_NAME,
    previousSpec,
    previousVersion: clusterSpecVersion(previousSpec),
    previousResourceVersion: h.cv().metadata.resourceVersion!,
    desiredSpec,
    desiredVersion: clusterSpecVersion(desiredSpec),
  };
  const now = new Date();
  return {
    id: 'ro_test1',
    kind: 'VIRTUAL_CLUSTER',
    state: 'PROGRESSING',
    fromVersion: change.previousVersion,
    toVersion: change.desiredVersion,
    selector: { clusterVersion: CV_NAME },
    strategy: { ...defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER), maxConcurrent: 1, clusterVersionChange: change },
    cause: {},
    idempotencyKey: null,
    rollbackOfId: null,
    message: null,
    createdAt: now,
    updatedAt: now,
    startedAt: now,
    finishedAt: null,
    ...extra,
  } as Rollout;
}

const target = (rollout: Rollout, name: string): AdmittedTarget => ({
  rolloutId: rollout.id,
  kind: 'VIRTUAL_CLUSTER',
  namespace: 'default',
  name,
  ordinal: 0,
  fromVersion: rollout.fromVersion,
  toVersion: rollout.toVersion!,
  admittedAt: new Date(),
});

describe('VirtualClusterDriver', () => {
  it('writes the ClusterVersion once with its own field manager, admits with the opt-in label, and reports success for its rollout', async () => {
    h = await startHarness();
    const rollout = rolloutFor(h, (spec) => (spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=5']));
    const driver = h.runtime.driver;
    await driver.prepare(rollout);
    const rv = h.cv().metadata.resourceVersion;
    expect(h.cv().spec.apiServer.statefulset.spec.template.spec.containers[0].args).toEqual(['-v=5']);
    expect((h.cv().metadata.managedFields as { manager: string }[]).map((f) => f.manager)).toContain('rollplane');
    await driver.prepare(rollout);
    expect(h.cv().metadata.resourceVersion).toBe(rv); // idempotent: nothing written the second time

    const t = target(rollout, 'vc-1');
    expect(await driver.observe(t, rollout)).toMatchObject({ phase: 'progressing' });
    await driver.admit(t, rollout);
    expect(h.vc('vc-1').metadata.labels?.['tenancy.x-k8s.io/ready-for-upgrade']).toBe('true');
    expect(h.vc('vc-1').metadata.annotations?.['rollplane.io/rollout-id']).toBe(rollout.id);
    await h.upgradeEnded('vc-1');
    const [event] = await h.observed(1);
    expect(event!.rolloutId).toBe(rollout.id);
    await expect.poll(() => driver.observe(t, rollout), { timeout: 5000 }).toEqual({ phase: 'succeeded' });
    // Another rollout to the same spec sees the cluster current (marker = resourceVersion, reason Completed).
    expect(await driver.observe(t, { ...rollout, id: 'ro_other' })).toEqual({ phase: 'succeeded' });
    // A rollout that wants another spec does not.
    expect(await driver.observe(t, { ...rollout, id: 'ro_other', toVersion: 'spec-000000000000' })).toMatchObject({ phase: 'progressing' });
  });

  it('reports a failed upgrade as a failed target with the upstream message', async () => {
    h = await startHarness({ vcluster: { readyTimeoutMs: 300 } });
    const rollout = rolloutFor(h, (spec) => (spec.apiServer.statefulset.spec.template.spec.containers[0].image = 'virtualcluster/apiserver-v1.16.2:bad-1'));
    const driver = h.runtime.driver;
    await driver.prepare(rollout);
    const t = target(rollout, 'vc-2');
    await driver.admit(t, rollout);
    await h.upgradeEnded('vc-2');
    await expect.poll(() => driver.observe(t, rollout), { timeout: 5000 }).toMatchObject({ phase: 'failed' });
    const result = await driver.observe(t, rollout);
    expect(result.phase === 'failed' && result.reason).toMatch(/^fail to upgrade: timed out/);
  });

  it('rolls back by restoring the previous spec', async () => {
    h = await startHarness();
    const forward = rolloutFor(h, (spec) => (spec.controllerManager.statefulset.spec.template.spec.containers[0].args = ['-v=9']));
    const before = clusterSpecVersion(h.cv().spec);
    await h.runtime.driver.prepare(forward);
    expect(clusterSpecVersion(h.cv().spec)).toBe(forward.toVersion);
    await h.runtime.driver.prepare({ ...forward, id: 'ro_back', rollbackOfId: forward.id, toVersion: forward.fromVersion! });
    expect(clusterSpecVersion(h.cv().spec)).toBe(before);
  });
});

describe('VirtualClusterDriver beside a vc-manager whose gate is turned on mid-rollout (ADR 0018)', () => {
  it("admits no further cluster and fails it with the reason; a cluster labelled before reports the vc-manager's outcome", async () => {
    h = await startHarness({ sim: { upstream: { vcManager: {} }, upstreamTiming: { vcManager: { pollMs: 20 } } } });
    const rollout = rolloutFor(h, (spec) => (spec.apiServer.statefulset.spec.template.spec.containers[0].args = ['-v=5']));
    await h.runtime.driver.prepare(rollout);
    // vc-1 was admitted (labelled for this rollout) before the gate was turned on; it is briefly not Running, so that
    // neither controller starts before rollplane's cache has seen the label, as it would have seen its own admission.
    const labelled = structuredClone(h.vc('vc-1'));
    labelled.metadata.labels = { ...labelled.metadata.labels, 'tenancy.x-k8s.io/ready-for-upgrade': 'true' };
    labelled.metadata.annotations = { ...labelled.metadata.annotations, 'rollplane.io/rollout-id': rollout.id };
    labelled.status.phase = 'Pending';
    h.sim.store.update(Resources.virtualclusters, labelled);
    await h.waitFor('the cache to show vc-1 labelled', async () => (await h!.runtime.queries.virtualCluster('default', 'vc-1'))?.readyForUpgrade, 10_000);
    const d = structuredClone(h.sim.store.get(Resources.deployments, 'vc-manager', 'vc-manager')!);
    d.spec.template.spec.containers[0].args = [...d.spec.template.spec.containers[0].args, '--feature-gates=ClusterVersionPartialUpgrade=true'];
    h.sim.store.update(Resources.deployments, d);
    await h.waitFor('the gate to be seen', () => h!.runtime.queries.upstreamUpgrades?.());
    expect(await h.runtime.driver.observe(target(rollout, 'vc-1'), rollout)).toMatchObject({ phase: 'progressing' });
    const running = structuredClone(h.vc('vc-1'));
    running.status.phase = 'Running';
    h.sim.store.update(Resources.virtualclusters, running);

    // vc-2: not labelled, and reported failed with the reason.
    await h.runtime.driver.admit(target(rollout, 'vc-2'), rollout);
    expect(h.vc('vc-2').metadata.labels?.['tenancy.x-k8s.io/ready-for-upgrade']).toBeUndefined();
    const refused = await h.runtime.driver.observe(target(rollout, 'vc-2'), rollout);
    expect(refused.phase).toBe('failed');
    expect((refused as { reason: string }).reason).toMatch(
      /^not admitted: the vc-manager Deployment vc-manager\/vc-manager runs with --feature-gates=ClusterVersionPartialUpgrade=true/,
    );

    // vc-1: the vc-manager upgrades it (and fails: the demo fleet's root-ca is a placeholder it cannot decode);
    // rollplane reports that outcome and recorded no upgrade of its own.
    await h.upgradeEnded('vc-1');
    // The driver reads its cache, which may trail the store by an event.
    const outcome = await h.waitFor(
      "the driver to see the end of vc-1's upgrade",
      async () => {
        const observed = await h!.runtime.driver.observe(target(rollout, 'vc-1'), rollout);
        return observed.phase !== 'progressing' && observed;
      },
      10_000,
    );
    expect(outcome).toEqual({ phase: 'failed', reason: 'the vc-manager upgraded the cluster and failed: fail to upgrade: failed to decode certificate' });
    expect(await h.observations()).toHaveLength(0);
  });
});
