/**
 * The controller's own rolling update (issue 27): the chart's Deployment starts the new pod beside the old one, and the
 * old pod keeps the leader lease — reconciling with the old --image — until it is stopped. rollplane releases no pool
 * before the controller's rollout is over: a pool released earlier is handled by the old process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BUMP, NEW, OLD, startRig, waitForRollout, type Rig } from './rig.js';

const HOLD = 'network.harvesterhci.io/hold-ippool-agent-upgrade';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe("waiting for the vm-dhcp-controller's own rollout", () => {
  it('releases the first pool only once no controller pod runs the old --image (the old one no longer leads)', async () => {
    // The new controller pod takes a while to become Ready, so the old one leads for that long.
    rig = await startRig({ fleet: 'pools=3,nodes=3,upstream=vm-dhcp', delays: { podReadyMs: 400, podTerminateMs: 50 } });
    const r = rig;
    let seq = 0;
    let oldControllerGone: number | undefined;
    let firstRelease: number | undefined;
    const pods = r.sim.store.resourceType('', 'pods')!;
    const unsubscribe = r.sim.store.subscribe((event) => {
      seq++;
      if (event.resource.plural === 'pods' && oldControllerGone === undefined) {
        const controllers = r.sim.store.list(pods, 'harvester-system').filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === 'controller');
        const oldOnes = controllers.filter((p) => p.spec.containers[0].args.includes(OLD));
        if (controllers.length > 0 && oldOnes.length === 0) oldControllerGone = seq;
      }
      if (event.resource.plural === 'ippools' && event.type === 'MODIFIED' && firstRelease === undefined) {
        if (event.previous?.metadata.annotations?.[HOLD] !== undefined && event.object.metadata.annotations?.[HOLD] === undefined) firstRelease = seq;
      }
    });
    try {
      const data = await r.gql(BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1' } } });
      const done = await waitForRollout(r, data.bumpAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'], 60_000);
      expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    } finally {
      unsubscribe();
    }
    expect(oldControllerGone).toBeDefined();
    expect(firstRelease).toBeDefined();
    expect(firstRelease!).toBeGreaterThan(oldControllerGone!);
  });
});
