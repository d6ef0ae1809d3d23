/**
 * The routing driver's per-cluster answers (issue 29). The finish of a rollout over several clusters: each cluster's
 * finish hears only of the other active rollouts with targets in that cluster. Beside the vm-dhcp-controller, `others` decides whether the controller is put
 * back ("another rollout to the same image still needs it"): given every cluster's rollouts, a bump to the same image
 * in another cluster kept this cluster's controller on an aborted or failed image, with its pools held for good.
 */
import { describe, expect, it } from 'vitest';
import { ClusterRoutedDriver, type ClusterDrivers, type MemberWriter } from '../../src/domain/ClusterRoutedDriver.js';
import type { LaunchGuard } from '../../src/domain/launchRules.js';
import type { RolloutDriver } from '../../src/domain/ports.js';
import type { NewTarget, Rollout } from '../../src/domain/RolloutService.js';
import { ConflictError } from '../../src/errors.js';

const rollout = (id: string) => ({ id, kind: 'AGENT_POOL', toVersion: 'agent:v2' }) as unknown as Rollout;

describe('ClusterRoutedDriver.finish', () => {
  it("gives each cluster's finish only the other rollouts with targets there", async () => {
    const heard = new Map<string, string[]>();
    const local = {
      kind: 'AGENT_POOL',
      finish: async (_r: Rollout, _s: AbortSignal, others: readonly Rollout[]) =>
        void heard.set(
          'local',
          others.map((o) => o.id),
        ),
    } as unknown as RolloutDriver;
    const writer = (cluster: string): MemberWriter =>
      ({
        finish: async (_r: Rollout, _s: AbortSignal, others: readonly Rollout[]) =>
          void heard.set(
            cluster,
            others.map((o) => o.id),
          ),
      }) as unknown as MemberWriter;
    const members = { writerOf: writer, driverOf: () => undefined, whyNotDriven: () => '' } as unknown as ClusterDrivers;
    const clusters: Record<string, string[]> = {
      ending: ['local', 'm1'],
      onlyLocal: ['local'],
      onlyM2: ['m2'],
      both: ['local', 'm1'],
    };
    const driver = new ClusterRoutedDriver(local, members, async (r) => clusters[r.id]!);

    await driver.finish(rollout('ending'), new AbortController().signal, ['onlyLocal', 'onlyM2', 'both'].map(rollout));

    expect(heard.get('local')).toEqual(['onlyLocal', 'both']);
    expect(heard.get('m1')).toEqual(['both']);
    expect(heard.has('m2')).toBe(false);
  });
});

/**
 * A rollback's rules came from `local`'s driver alone: with `local` in direct mode, the rollback of a member's pools
 * beside its vm-dhcp-controller got no guard (and no check of its images). Each cluster's driver now answers for its
 * own targets, and every guard applies.
 */
describe('ClusterRoutedDriver.rollbackRules', () => {
  const target = (cluster: string, name: string, toVersion = 'agent:v1'): NewTarget => ({
    cluster,
    namespace: 'default',
    name,
    fromVersion: 'agent:v2',
    toVersion,
  });
  /** `local` in direct mode (nothing to add); m1 beside its controller: a guard refusing any busy rollout. */
  function routed() {
    const asked = new Map<string, string[]>();
    const everyAsked = new Map<string, string[]>();
    const ruled = (cluster: string, guard?: LaunchGuard) => async (_original: Rollout, targets: readonly NewTarget[], everyTarget?: readonly NewTarget[]) => {
      asked.set(
        cluster,
        targets.map((t) => t.name),
      );
      everyAsked.set(
        cluster,
        (everyTarget ?? []).map((t) => t.name),
      );
      return guard ? { guard } : {};
    };
    const refuseAll: LaunchGuard = (busy) => {
      if (busy.length > 0) throw new ConflictError('in cluster m1 the vm-dhcp-controller runs one --image');
    };
    const local = { kind: 'AGENT_POOL', rollbackRules: ruled('local') } as unknown as RolloutDriver;
    const m1 = { kind: 'AGENT_POOL', rollbackRules: ruled('m1', refuseAll) } as unknown as RolloutDriver;
    const members = {
      writerOf: () => undefined,
      driverOf: (cluster: string) => (cluster === 'm1' ? m1 : undefined),
      whyNotDriven: () => 'not driven',
    } as unknown as ClusterDrivers;
    return { driver: new ClusterRoutedDriver(local, members, async () => []), asked, everyAsked };
  }

  it("asks each cluster's own driver about its own targets, and applies the member's guard", async () => {
    const { driver, asked } = routed();
    const rules = await driver.rollbackRules!(rollout('original'), [target('local', 'net-1'), target('m1', 'net-2'), target('m1', 'net-3')]);
    expect(asked.get('local')).toEqual(['net-1']);
    expect(asked.get('m1')).toEqual(['net-2', 'net-3']);
    expect(rules.guard).toBeDefined();
    expect(() => rules.guard!([rollout('busy')] as never, { superseding: new Set() })).toThrow(ConflictError);
    expect(() => rules.guard!([], { superseding: new Set() })).not.toThrow();
  });

  it("gives each cluster's rule the whole rollback too, for a rule that spans clusters (one image per rollout)", async () => {
    const { driver, everyAsked } = routed();
    await driver.rollbackRules!(rollout('original'), [target('local', 'net-1', 'agent:v0'), target('m1', 'net-2')]);
    expect(everyAsked.get('m1')).toEqual(['net-1', 'net-2']);
  });

  it('adds nothing where no cluster has a rule to add (direct mode everywhere)', async () => {
    const { driver } = routed();
    expect(await driver.rollbackRules!(rollout('original'), [target('local', 'net-1', 'agent:v0'), target('local', 'net-2')])).toEqual({});
  });
});

/**
 * Each pass of a rollout asked every member again whether to halt and how many of its pools are down outside the
 * rollout: over 1,000 members a third of the service's CPU in the clusters bench. A member's answer is kept while its
 * caches do not change (a halt's "none" for at most a second: beside the controller it reads the history too).
 */
describe("ClusterRoutedDriver: a member's answers while its caches do not change", () => {
  function routed() {
    const asked = { halt: 0, unavailable: 0 };
    const state = { changes: 1 as number | undefined, reason: undefined as string | undefined, down: 2 };
    const m1 = {
      kind: 'AGENT_POOL',
      haltReason: async () => {
        asked.halt++;
        return state.reason;
      },
      unavailableOutsideRollout: async () => {
        asked.unavailable++;
        return state.down;
      },
    } as unknown as RolloutDriver;
    const local = { kind: 'AGENT_POOL' } as unknown as RolloutDriver;
    const members = {
      writerOf: () => undefined,
      driverOf: (cluster: string) => (cluster === 'm1' ? m1 : undefined),
      whyNotDriven: () => 'not driven',
      cacheChangesOf: (cluster: string) => (cluster === 'm1' ? state.changes : undefined),
    } as unknown as ClusterDrivers;
    return { driver: new ClusterRoutedDriver(local, members, async () => ['local', 'm1']), asked, state };
  }
  const progressing = { ...rollout('r1'), state: 'PROGRESSING' } as Rollout;

  it('asks again whether to halt only after its caches changed, and always while the rollout is PENDING', async () => {
    const { driver, asked, state } = routed();
    expect(await driver.haltReason!(progressing)).toBeUndefined();
    expect(await driver.haltReason!(progressing)).toBeUndefined();
    expect(asked.halt).toBe(1);
    state.changes = 2;
    state.reason = 'the vm-dhcp-controller no longer deploys agents';
    expect(await driver.haltReason!(progressing)).toBe('in member cluster m1: the vm-dhcp-controller no longer deploys agents');
    // A reason is never kept: it is asked again (the rollout fails on the first one anyway).
    expect(await driver.haltReason!(progressing)).toBe('in member cluster m1: the vm-dhcp-controller no longer deploys agents');
    expect(asked.halt).toBe(3);
    state.reason = undefined;
    const pending = { ...progressing, id: 'r2', state: 'PENDING' } as Rollout;
    await driver.haltReason!(pending);
    await driver.haltReason!(pending);
    expect(asked.halt).toBe(5);
  });

  it('asks every time when the member cannot say whether its caches changed', async () => {
    const { driver, asked, state } = routed();
    state.changes = undefined;
    await driver.haltReason!(progressing);
    await driver.haltReason!(progressing);
    expect(asked.halt).toBe(2);
  });

  it('counts the pools down outside the rollout again only after its caches changed', async () => {
    const { driver, asked, state } = routed();
    const keys = new Set(['m1:default/net-1']);
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(2);
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(2);
    expect(asked.unavailable).toBe(1);
    state.changes = 7;
    state.down = 0;
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(0);
    expect(asked.unavailable).toBe(2);
    // A finished rollout's answers are gone.
    await driver.finish(progressing, new AbortController().signal, []);
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(0);
    expect(asked.unavailable).toBe(3);
  });
});
