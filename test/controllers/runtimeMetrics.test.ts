import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { ControllerSnapshot } from '../../src/controller/Controller.js';
import { registerRuntimeMetrics } from '../../src/controllers/runtimeMetrics.js';
import { parsePrometheusText } from '../helpers/promText.js';

const snapshot = (name: string, delayed: number): ControllerSnapshot => ({
  name,
  running: true,
  workers: 1,
  depth: 0,
  delayed,
  inFlight: [],
  retries: {},
  lastErrors: {},
});

describe('registerRuntimeMetrics', () => {
  it("shows each informer's resourceVersion and each queue's delayed keys as they are at scrape time", async () => {
    const registry = new Registry();
    let rv: string | undefined;
    let delayed = 2;
    let skipped = 0;
    const manager = {
      informerVersions: () => [
        { name: 'pods', path: '/api/v1/pods', resourceVersion: rv, skipped: 0 },
        { name: 'agents', path: '/api/v1/namespaces/x/pods', labelSelector: 'app=a,tier!=b', resourceVersion: 'opaque-7', skipped },
      ],
      snapshots: () => [snapshot('pools', delayed)],
    };
    registerRuntimeMetrics(registry, manager);
    registerRuntimeMetrics(registry, manager); // a second host on the same registry registers nothing twice
    const read = async () => parsePrometheusText(await registry.metrics()).filter((s) => s.name.startsWith('rollplane_'));

    const before = await read();
    expect(before.find((s) => s.labels.informer === 'pods')?.value).toBeNaN();
    expect(before.find((s) => s.labels.informer === 'agents')).toMatchObject({
      labels: { resource: '/api/v1/namespaces/x/pods', label_selector: 'app=a,tier!=b', field_selector: '' },
    });
    expect(before.find((s) => s.labels.informer === 'agents')?.value).toBeNaN();
    expect(before.find((s) => s.name === 'rollplane_workqueue_delayed')).toMatchObject({ labels: { name: 'pools' }, value: 2 });

    const skippedOf = (series: Awaited<ReturnType<typeof read>>, informer: string) =>
      series.find((s) => s.name === 'rollplane_informer_skipped_objects_total' && s.labels.informer === informer)?.value;
    expect(skippedOf(before, 'agents')).toBe(0);

    rv = '4711';
    delayed = 0;
    skipped = 3;
    const after = await read();
    expect(after.find((s) => s.labels.informer === 'pods')?.value).toBe(4711);
    expect(after.find((s) => s.name === 'rollplane_workqueue_delayed')?.value).toBe(0);
    expect(skippedOf(after, 'agents')).toBe(3);
    expect(skippedOf(after, 'pods')).toBe(0);
  });
});
