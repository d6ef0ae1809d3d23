import { afterEach, describe, expect, it } from 'vitest';
import { ManualScheduler } from '../../../src/sim/behaviour/index.js';
import { Resources } from '../../../src/sim/store/resources.js';
import { condition, type Harness, isReady, pod, startHarness, template } from './harness.js';

let h: Harness | undefined;
afterEach(() => {
  h?.stop();
  h = undefined;
});

const get = (name: string, ns = 'default') => h!.store.get(Resources.pods, ns, name);

describe('simulated kubelet (manual clock)', () => {
  const clock = () => new ManualScheduler();

  async function advance(scheduler: ManualScheduler, ms: number): Promise<void> {
    scheduler.advance(ms);
    await h!.behaviour.idle();
  }

  it('schedules by nodeSelector, then moves Pending → Running → Ready after the configured delays', async () => {
    const scheduler = clock();
    h = startHarness({ scheduler, delays: { podScheduleMs: 100, podStartMs: 1000, podReadyMs: 500 }, nodeLabels: (i) => (i === 1 ? { disk: 'ssd' } : {}) });
    h.store.create(Resources.pods, pod('web', { nodeSelector: { disk: 'ssd' } }));
    await h.behaviour.idle();
    expect(get('web')!.spec.nodeName).toBeUndefined();

    await advance(scheduler, 100);
    const scheduled = get('web')!;
    expect(scheduled.spec.nodeName).toBe('node-2');
    expect(scheduled.status.phase).toBe('Pending');
    expect(condition(scheduled, 'PodScheduled')?.status).toBe('True');

    await advance(scheduler, 999);
    expect(get('web')!.status.phase).toBe('Pending');
    await advance(scheduler, 1);
    const running = get('web')!;
    expect(running.status.phase).toBe('Running');
    expect(isReady(running)).toBe(false);
    expect(condition(running, 'Initialized')?.status).toBe('True');
    expect(running.status.containerStatuses[0]).toMatchObject({ name: 'app', image: 'nginx:1.27', ready: false, restartCount: 0 });
    expect(running.status.containerStatuses[0].state.running.startedAt).toBeDefined();
    expect(running.status.containerStatuses[0].imageID).toContain('nginx@sha256:');
    expect(running.status.podIP).toMatch(/^10\.42\./);
    expect(running.status.hostIP).toBe('192.168.10.2');
    expect(running.status.startTime).toBeDefined();

    await advance(scheduler, 499);
    expect(isReady(get('web'))).toBe(false);
    await advance(scheduler, 1);
    const ready = get('web')!;
    expect(isReady(ready)).toBe(true);
    expect(condition(ready, 'ContainersReady')?.status).toBe('True');
    expect(Date.parse(condition(ready, 'Ready')!.lastTransitionTime!)).toBe(scheduler.now());
    expect(ready.status.containerStatuses[0].ready).toBe(true);
  });

  it('honours required node affinity (In) and reports Unschedulable when no node fits', async () => {
    h = startHarness({ nodeLabels: (i) => ({ zone: `z${i}` }) });
    const affinity = (values: string[]) => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values }] }] },
        },
      },
    });
    h.store.create(Resources.pods, pod('fits', affinity(['z2'])));
    h.store.create(Resources.pods, pod('nowhere', affinity(['mars'])));
    await h.until(() => isReady(get('fits')) && condition(get('nowhere'), 'PodScheduled')?.status === 'False', 'scheduling decided');
    expect(get('fits')!.spec.nodeName).toBe('node-3');
    expect(condition(get('nowhere'), 'PodScheduled')?.reason).toBe('Unschedulable');
    // A node that starts to match gets the pod.
    const node = structuredClone(h.store.get(Resources.nodes, undefined, 'node-1')!);
    node.metadata.labels!.zone = 'mars';
    h.store.update(Resources.nodes, node);
    await h.until(() => isReady(get('nowhere')), 'the pending pod to run');
    expect(get('nowhere')!.spec.nodeName).toBe('node-1');
  });

  it('schedules only onto nodes whose NoSchedule taints the pod tolerates', async () => {
    h = startHarness({ nodes: 2 });
    for (const name of ['node-1', 'node-2']) {
      const node = structuredClone(h.store.get(Resources.nodes, undefined, name)!);
      node.spec.taints = [{ key: 'dedicated', value: name === 'node-1' ? 'db' : 'gpu', effect: 'NoSchedule' }];
      h.store.update(Resources.nodes, node);
    }
    h.store.create(Resources.pods, pod('plain', {}));
    h.store.create(Resources.pods, pod('gpu-job', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }] }));
    h.store.create(Resources.pods, pod('anything', { tolerations: [{ operator: 'Exists' }] }));
    await h.until(
      () => isReady(get('gpu-job')) && isReady(get('anything')) && condition(get('plain'), 'PodScheduled')?.status === 'False',
      'scheduling decided',
    );
    expect(get('gpu-job')!.spec.nodeName).toBe('node-2');
    expect(get('plain')!.spec.nodeName).toBeUndefined();
  });

  it('is Ready only when every readiness gate condition is True', async () => {
    h = startHarness();
    h.store.create(Resources.pods, pod('gated', { readinessGates: [{ conditionType: 'rollplane.io/peer-pods-ready' }] }));
    await h.until(() => condition(get('gated'), 'ContainersReady')?.status === 'True', 'containers ready');
    await h.behaviour.idle();
    expect(isReady(get('gated'))).toBe(false);
    expect(condition(get('gated'), 'Ready')?.reason).toBe('ReadinessGatesNotReady');

    const setGate = (status: string) => {
      const current = get('gated')!;
      h!.store.update(
        Resources.pods,
        {
          ...current,
          status: {
            ...current.status,
            conditions: [
              ...current.status.conditions.filter((c: any) => c.type !== 'rollplane.io/peer-pods-ready'),
              { type: 'rollplane.io/peer-pods-ready', status },
            ],
          },
        },
        'status',
      );
    };
    setGate('True');
    await h.until(() => isReady(get('gated')), 'the gate to open');
    setGate('False');
    await h.until(() => !isReady(get('gated')), 'the gate to close again');
  });

  it('leaves a pod with a bad image Pending in ImagePullBackOff, never Ready', async () => {
    const scheduler = clock();
    h = startHarness({ scheduler, delays: { podStartMs: 100, podReadyMs: 100 } });
    h.store.create(Resources.pods, pod('broken', { containers: [{ name: 'app', image: 'registry.local/app:bad-tag' }] }));
    await h.behaviour.idle();
    for (let i = 0; i < 10; i++) await advance(scheduler, 1000);
    const broken = get('broken')!;
    expect(broken.status.phase).toBe('Pending');
    expect(broken.status.containerStatuses[0].state.waiting.reason).toBe('ImagePullBackOff');
    expect(isReady(broken)).toBe(false);
    expect(scheduler.pending()).toBe(0); // nothing left to happen
  });

  it('removes a deleted pod on a Ready node after podTerminateMs', async () => {
    const scheduler = clock();
    h = startHarness({ scheduler, delays: { podTerminateMs: 200 } });
    h.store.create(Resources.pods, pod('short-lived', { nodeName: 'node-1' }));
    await h.behaviour.idle();
    expect(isReady(get('short-lived'))).toBe(true);
    h.store.delete(Resources.pods, 'default', 'short-lived');
    await h.behaviour.idle();
    expect(get('short-lived')?.metadata.deletionTimestamp).toBeDefined();
    await advance(scheduler, 199);
    expect(get('short-lived')).toBeDefined();
    await advance(scheduler, 1);
    expect(get('short-lived')).toBeUndefined();
  });

  it('keeps a terminating pod with finalizers until they are removed', async () => {
    h = startHarness();
    h.store.create(Resources.pods, {
      ...pod('held', { nodeName: 'node-1' }),
      metadata: { name: 'held', namespace: 'default', finalizers: ['example.com/hold'] },
    });
    await h.until(() => isReady(get('held')), 'ready');
    h.store.delete(Resources.pods, 'default', 'held');
    await h.until(() => get('held')?.metadata.deletionGracePeriodSeconds === 0, 'the kubelet to confirm the termination');
    expect(get('held')).toBeDefined();
    const current = get('held')!;
    h.store.update(Resources.pods, { ...current, metadata: { ...current.metadata, finalizers: [] } });
    await h.until(() => get('held') === undefined, 'the pod to go');
  });

  it('on a crashed node: pods turn unready and a deleted pod stays Terminating until force-deleted', async () => {
    const scheduler = clock();
    h = startHarness({ scheduler, delays: { podTerminateMs: 200, podReadyMs: 300 } });
    h.store.create(Resources.pods, pod('default-net-48-agent', { nodeName: 'node-1' }));
    h.store.create(Resources.pods, pod('bystander', { nodeName: 'node-2' }));
    await h.behaviour.idle();
    await advance(scheduler, 300);
    expect(isReady(get('default-net-48-agent'))).toBe(true);

    const crashed = h.behaviour.nodes.crash('node-1');
    expect(condition(crashed, 'Ready')?.status).toBe('Unknown');
    expect(crashed.spec.taints.map((t: { key: string; effect: string }) => `${t.key}:${t.effect}`)).toEqual([
      'node.kubernetes.io/unreachable:NoSchedule',
      'node.kubernetes.io/unreachable:NoExecute',
    ]);
    await h.behaviour.idle();
    expect(isReady(get('default-net-48-agent'))).toBe(false);
    expect(condition(get('default-net-48-agent'), 'Ready')?.reason).toBe('NodeNotReady');
    expect(isReady(get('bystander'))).toBe(true);

    h.store.delete(Resources.pods, 'default', 'default-net-48-agent');
    for (let i = 0; i < 10; i++) await advance(scheduler, 60_000);
    expect(get('default-net-48-agent')?.metadata.deletionTimestamp).toBeDefined();
    // The fixed name cannot be reused while the old pod hangs (harvester#8205).
    expect(() => h!.store.create(Resources.pods, pod('default-net-48-agent', { nodeName: 'node-2' }))).toThrow(/already exists/);

    h.store.delete(Resources.pods, 'default', 'default-net-48-agent', { gracePeriodSeconds: 0 });
    expect(get('default-net-48-agent')).toBeUndefined();

    h.store.create(Resources.pods, pod('late', { nodeName: 'node-1' }));
    expect(h.behaviour.nodes.recover('node-1').spec.taints).toBeUndefined();
    await h.behaviour.idle();
    expect(isReady(get('late'))).toBe(false);
    await advance(scheduler, 300);
    expect(isReady(get('late'))).toBe(true);
  });

  it("restarts peer pods on a node when that node's agent is replaced, and only there", async () => {
    h = startHarness({ nodes: 2 });
    const agentLabels = { app: 'caa', 'rollplane.io/node-agent': 'true' };
    h.store.create(Resources.daemonsets, {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'caa', namespace: 'default', labels: agentLabels },
      spec: { selector: { matchLabels: { app: 'caa' } }, updateStrategy: { type: 'OnDelete' }, template: template({ app: 'caa' }, 'caa:v1') },
    });
    for (const node of ['node-1', 'node-2']) {
      for (const n of [1, 2]) h.store.create(Resources.pods, pod(`peer-${node}-${n}`, { nodeName: node, runtimeClassName: 'kata-remote' }, { app: 'peer' }));
    }
    h.store.create(Resources.pods, pod('ordinary', { nodeName: 'node-1' }));
    const peers = () => h!.store.list(Resources.pods, 'default').filter((p) => p.metadata.labels?.app === 'peer');
    const agents = () => h!.store.list(Resources.pods, 'default').filter((p) => p.metadata.labels?.app === 'caa');
    await h.until(() => peers().every(isReady) && agents().length === 2 && agents().every(isReady), 'all running');
    const before = new Map(peers().map((p) => [p.metadata.name, condition(p, 'Ready')!.lastTransitionTime!]));

    const unready = new Set<string>();
    // One sequence of "became Ready" events, so the order of agent and peer readiness is checked exactly.
    const readyOrder: string[] = [];
    h.onEvent((e) => {
      if (e.object.metadata.labels?.app === 'peer' && e.type === 'MODIFIED' && !isReady(e.object)) unready.add(e.object.metadata.name);
      if (e.type === 'MODIFIED' && isReady(e.object) && !isReady(e.previous)) {
        readyOrder.push(e.object.metadata.labels?.app === 'caa' ? e.object.metadata.uid! : e.object.metadata.name);
      }
    });
    const oldAgent = agents().find((p) => p.spec.nodeName === 'node-1')!;
    h.store.delete(Resources.pods, 'default', oldAgent.metadata.name);
    await h.until(
      () => agents().some((p) => p.spec.nodeName === 'node-1' && p.metadata.uid !== oldAgent.metadata.uid && isReady(p)) && peers().every(isReady),
      'the new agent and its peer pods to be Ready',
    );
    const newAgent = agents().find((p) => p.spec.nodeName === 'node-1' && p.metadata.uid !== oldAgent.metadata.uid)!;

    expect([...unready].sort()).toEqual(['peer-node-1-1', 'peer-node-1-2']);
    for (const p of peers()) {
      const onNode1 = p.spec.nodeName === 'node-1';
      expect(p.status.containerStatuses[0].restartCount).toBe(onNode1 ? 1 : 0);
      const transition = condition(p, 'Ready')!.lastTransitionTime!;
      if (onNode1) {
        expect(Date.parse(transition)).toBeGreaterThanOrEqual(Date.parse(newAgent.status.startTime));
        expect(transition).not.toBe(before.get(p.metadata.name));
      } else {
        expect(transition).toBe(before.get(p.metadata.name));
      }
    }
    expect(get('ordinary')!.status.containerStatuses[0].restartCount).toBe(0);
    // As upstream's startup probe: the new agent is Ready only after its peer pods are Ready again.
    const agentReadyAt = Date.parse(condition(newAgent, 'Ready')!.lastTransitionTime!);
    for (const p of peers().filter((p) => p.spec.nodeName === 'node-1')) {
      expect(agentReadyAt).toBeGreaterThanOrEqual(Date.parse(condition(p, 'Ready')!.lastTransitionTime!));
    }
    expect(readyOrder.indexOf(newAgent.metadata.uid!)).toBeGreaterThan(Math.max(...['peer-node-1-1', 'peer-node-1-2'].map((n) => readyOrder.lastIndexOf(n))));
  });
});
