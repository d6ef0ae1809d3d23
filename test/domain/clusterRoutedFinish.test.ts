/**
 * The finish of a rollout over several clusters (issue 29): each cluster's finish hears only of the other active
 * rollouts with targets in that cluster. Beside the vm-dhcp-controller, `others` decides whether the controller is put
 * back ("another rollout to the same image still needs it"): given every cluster's rollouts, a bump to the same image
 * in another cluster kept this cluster's controller on an aborted or failed image, with its pools held for good.
 */
import { describe, expect, it } from 'vitest';
import { ClusterRoutedDriver, type ClusterDrivers, type MemberWriter } from '../../src/domain/ClusterRoutedDriver.js';
import type { RolloutDriver } from '../../src/domain/ports.js';
import type { Rollout } from '../../src/domain/RolloutService.js';

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
