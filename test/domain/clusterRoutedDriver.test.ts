/**
 * The routing driver's per-cluster answers (issue 29). The finish of a rollout over several clusters: each cluster's
 * finish hears only of the other active rollouts with targets in that cluster. Beside the vm-dhcp-controller, `others` decides whether the controller is put
 * back ("another rollout to the same image still needs it"): given every cluster's rollouts, a bump to the same image
 * in another cluster kept this cluster's controller on an aborted or failed image, with its pools held for good.
 */
import { describe, expect, it } from 'vitest';
import { ClusterRoutedDriver, type ClusterDrivers, type MemberWriter } from '../../src/domain/ClusterRoutedDriver.js';
import type { LaunchGuard } from '../../src/domain/launchRules.js';
import { MemberChangeFeed } from '../../src/clusters/memberChangeFeed.js';
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
 * rollout: over 1,000 members most of the service's CPU in the clusters bench. A pass now asks again only the members
 * whose caches changed since its last look (a halt's "none" is read again from all of them each second: beside the
 * controller it reads the history too).
 */
describe('ClusterRoutedDriver: members asked again only once they changed', () => {
  function routed() {
    const asked = { halt: [] as string[], down: [] as string[] };
    const state = {
      reason: undefined as string | undefined,
      down: new Map([
        ['m1', 2],
        ['m2', 1],
      ]),
    };
    const feed = new MemberChangeFeed();
    const member = (cluster: string) =>
      ({
        kind: 'AGENT_POOL',
        haltReason: async () => {
          asked.halt.push(cluster);
          return cluster === 'm2' ? state.reason : undefined;
        },
        unavailableOutsideRollout: async () => {
          asked.down.push(cluster);
          return state.down.get(cluster) ?? 0;
        },
      }) as unknown as RolloutDriver;
    const drivers = new Map([
      ['m1', member('m1')],
      ['m2', member('m2')],
    ]);
    const local = { kind: 'AGENT_POOL', unavailableOutsideRollout: async () => 10 } as unknown as RolloutDriver;
    const members = {
      writerOf: () => undefined,
      driverOf: (cluster: string) => drivers.get(cluster),
      whyNotDriven: () => 'not driven',
      changedSince: (seq: number | undefined) => feed.changedSince(seq),
    } as unknown as ClusterDrivers;
    return { driver: new ClusterRoutedDriver(local, members, async () => ['local', 'm1', 'm2']), asked, state, feed };
  }
  const progressing = { ...rollout('r1'), state: 'PROGRESSING' } as Rollout;

  it('asks whether to halt only the members that changed, every member while the rollout is PENDING or its state changed', async () => {
    const { driver, asked, state, feed } = routed();
    expect(await driver.haltReason!(progressing)).toBeUndefined();
    expect(asked.halt).toEqual(['m1', 'm2']);
    expect(await driver.haltReason!(progressing)).toBeUndefined();
    expect(asked.halt).toEqual(['m1', 'm2']);
    state.reason = 'the vm-dhcp-controller no longer deploys agents';
    feed.note('m2');
    expect(await driver.haltReason!(progressing)).toBe('in member cluster m2: the vm-dhcp-controller no longer deploys agents');
    expect(asked.halt).toEqual(['m1', 'm2', 'm2']);
    state.reason = undefined;
    const paused = { ...progressing, state: 'PAUSED' } as Rollout;
    await driver.haltReason!(paused);
    expect(asked.halt).toEqual(['m1', 'm2', 'm2', 'm1', 'm2']);
    const pending = { ...progressing, id: 'r2', state: 'PENDING' } as Rollout;
    await driver.haltReason!(pending);
    await driver.haltReason!(pending);
    expect(asked.halt.length).toBe(9);
  });

  it('asks every member every time when the members cannot say what changed', async () => {
    let asked = 0;
    const haltReason = async () => {
      asked++;
      return undefined;
    };
    const members = { writerOf: () => undefined, driverOf: () => ({ haltReason }), whyNotDriven: () => '' } as unknown as ClusterDrivers;
    const driver = new ClusterRoutedDriver({ kind: 'AGENT_POOL' } as unknown as RolloutDriver, members, async () => ['m1', 'm2']);
    await driver.haltReason!(progressing);
    await driver.haltReason!(progressing);
    expect(asked).toBe(4);
  });

  it('counts the pools down outside the rollout again only in the members that changed', async () => {
    const { driver, asked, state, feed } = routed();
    const keys = new Set(['m1:default/net-1']);
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(13);
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(13);
    expect(asked.down).toEqual(['m1', 'm2']);
    state.down.set('m1', 0);
    feed.note('m1');
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(11);
    expect(asked.down).toEqual(['m1', 'm2', 'm1']);
    // A finished rollout's looks are gone: counted again from every member.
    await driver.finish(progressing, new AbortController().signal, []);
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(11);
    expect(asked.down).toEqual(['m1', 'm2', 'm1', 'm1', 'm2']);
  });

  // Attack 25, F2 and F3: a member whose caches are first being filled (a leader just started) was counted as 0 down,
  // and one unreachable within its cache grace dropped its down pools at once.
  it("counts a member on the caches it keeps, and admits nothing while one's caches are first filled", async () => {
    const down = new Map([
      ['m1', 2],
      ['m2', 1],
    ]);
    let m2: RolloutDriver | 'syncing' | undefined = 'syncing';
    const asked: string[] = [];
    const counting = (cluster: string) =>
      ({
        unavailableOutsideRollout: async () => {
          asked.push(cluster);
          return down.get(cluster) ?? 0;
        },
      }) as unknown as RolloutDriver;
    const feed = new MemberChangeFeed();
    const members = {
      writerOf: () => undefined,
      // Not driven (unreachable within the grace, or syncing): the engine's reads see no driver.
      driverOf: () => undefined,
      whyNotDriven: () => 'not driven',
      changedSince: (seq: number | undefined) => feed.changedSince(seq),
      countingDriverOf: (cluster: string) => (cluster === 'm1' ? counting('m1') : m2),
    } as unknown as ClusterDrivers;
    const driver = new ClusterRoutedDriver({ kind: 'AGENT_POOL' } as unknown as RolloutDriver, members, async () => ['m1', 'm2']);
    const keys = new Set<string>();
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(Number.POSITIVE_INFINITY);
    m2 = counting('m2');
    feed.note('m2');
    // Every member counted again (the look while m2 synced was not kept): m1's 2 from its kept caches, m2's 1.
    expect(await driver.unavailableOutsideRollout!(progressing, keys)).toBe(3);
    expect(asked).toEqual(['m1', 'm1', 'm2']);
  });
});
