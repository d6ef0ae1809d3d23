import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ClusterRegistries } from '../src/metricsByCluster.js';
import { parsePrometheusText } from './helpers/promText.js';

/** What a member runtime registers: the same names as local's runtime, so one registry could not hold both. */
function runtimeMetrics(registry: Registry, depth: number) {
  new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'], registers: [registry] }).set({ name: 'agentpool' }, depth);
  new Histogram({ name: 'rollplane_agent_recreation_seconds', help: 'h', labelNames: ['reason'], buckets: [1], registers: [registry] }).observe(
    { reason: 'drift' },
    0.5,
  );
}

describe('member runtimes on /metrics', () => {
  it('renders local unchanged and each member under the same families with a cluster label, until released', async () => {
    // Local's registry (the process metrics vary between two reads: left out).
    const metrics = { registry: new Registry(), members: new ClusterRegistries() };
    runtimeMetrics(metrics.registry, 1);
    const before = await metrics.registry.metrics();
    // No member: the exposition is local's, byte for byte.
    expect(await metrics.members.render(metrics.registry)).toBe(before);

    const edge1 = metrics.members.registryFor('edge-1');
    runtimeMetrics(edge1, 5);
    new Counter({ name: 'member_only_total', help: 'only members have it', registers: [edge1] }).inc(2);
    const edge2 = metrics.members.registryFor('edge-2');
    runtimeMetrics(edge2, 7);
    const text = await metrics.members.render(metrics.registry);

    // One HELP and TYPE per family: Prometheus refuses a family twice.
    const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
    expect(new Set(types).size).toBe(types.length);
    expect(types).toContain('# TYPE member_only_total counter');
    const samples = parsePrometheusText(text);
    const depth = samples.filter((s) => s.name === 'workqueue_depth').map((s) => [s.labels.cluster ?? '', s.value]);
    expect(depth).toEqual([
      ['', 1],
      ['edge-1', 5],
      ['edge-2', 7],
    ]);
    // local's series keep their exact lines (no label added), so existing queries read what they read.
    for (const line of before.split('\n').filter((l) => l && !l.startsWith('#'))) expect(text.split('\n')).toContain(line);
    expect(samples.filter((s) => s.name === 'rollplane_agent_recreation_seconds_bucket' && s.labels.cluster === 'edge-2')).toEqual([
      { name: 'rollplane_agent_recreation_seconds_bucket', labels: { le: '1', reason: 'drift', cluster: 'edge-2' }, value: 1 },
      { name: 'rollplane_agent_recreation_seconds_bucket', labels: { le: '+Inf', reason: 'drift', cluster: 'edge-2' }, value: 1 },
    ]);
    expect(samples.find((s) => s.name === 'member_only_total')).toEqual({ name: 'member_only_total', labels: { cluster: 'edge-1' }, value: 2 });

    // A runtime that stops takes its series with it; an older registry released late does not take a newer one's.
    metrics.members.release('edge-1', edge1);
    const stale = metrics.members.registryFor('edge-2');
    metrics.members.release('edge-2', edge2);
    expect(metrics.members.clusters()).toEqual(['edge-2']);
    metrics.members.release('edge-2', stale);
    expect(await metrics.members.render(metrics.registry)).toBe(before);
  });
});
