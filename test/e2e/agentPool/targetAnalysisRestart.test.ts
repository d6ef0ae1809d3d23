import { afterAll, expect, it } from 'vitest';
import { startService } from '../../helpers/child.js';
import { finishedRollout } from '../../helpers/crashPoint.js';
import { gqlData } from '../../helpers/graphql.js';
import { describeWithPrometheus, startTestPrometheus, type TestPrometheus } from '../../helpers/prometheus.js';
import { NEW, rigPerTest, serviceEnv, startRig } from './rig.js';

/**
 * The service SIGKILLed while an analysis between targets measures (issue 33, ADR 0071): the restarted service (the
 * next leader, on the same database) continues the step's run from its recorded measurements — each metric numbered
 * 0 … count-1 exactly once, no measurement lost or taken twice, one run — and the rollout goes on past the step.
 * Debian's Prometheus scrapes the simulator's agents.
 */
const COUNT = 8;
const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: leases }
spec:
  args: [{ name: name }, { name: version }]
  metrics:
  - name: leases
    interval: 1s
    count: ${COUNT}
    successCondition: result[0] > 0
    noData: WAIT(30s)
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_leases_total{pool=~"{{args.name}}",version="{{args.version}}"}[5s]))
`;

const GATE = `query ($id: ID!) { rollout(id: $id) { state gate(key: "targets:1") {
  state analysisRuns { id attempt phase measurements(first: 500) { metric number verdict } } } } }`;

const t = rigPerTest();
let prometheus: TestPrometheus | undefined;
afterAll(async () => {
  await prometheus?.stop();
});

describeWithPrometheus('a service killed while an analysis between targets measures', () => {
  it('is continued by the restarted service from its measurements: none lost, none repeated, one run', async () => {
    t.rig = await startRig({ fleet: 'pools=3,nodes=2', delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    prometheus = await startTestPrometheus([{ url: r.sim.url, job: 'sim' }], 1000);
    await prometheus.waitForSeries('sim_dhcp_leases_total', { min: 3 });
    const env = { ...serviceEnv(r), ROLLPLANE_PROMETHEUS_URL: prometheus.url };
    let service = await startService(env);
    t.service = service;
    await r.waitFor('pools listed', async () => (await gqlData(service.url, '{ agentPools { totalCount } }')).agentPools.totalCount === 3);
    const bump = await gqlData(service.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: { image: NEW, strategy: { maxUnavailable: '1', analysis: { after: [1], config: { template: TEMPLATE } } } },
    });
    const id = bump.bumpAgentImage.rollout.id as string;
    const measured = async (url: string) => {
      const run = (await gqlData(url, GATE, { id })).rollout.gate?.analysisRuns?.[0];
      return (run?.measurements ?? []).filter((m: { verdict: string }) => m.verdict !== 'WAITING').length as number;
    };
    // Killed mid-analysis: some measurements taken, not all; no second pool admitted meanwhile.
    await r.waitFor('the step analysis under way', async () => (await measured(service.url)) >= 2, 60_000);
    service.child.kill('SIGKILL');
    await service.exited;
    expect(r.agent('net-2')!.spec.containers[0].image).not.toBe(NEW);

    service = await startService(env);
    t.service = service;
    const done = await finishedRollout<{ state: string }>(service.url, id, GATE, 120_000);
    expect(done.state).toBe('SUCCEEDED');
    const rollout = (await gqlData(service.url, GATE, { id })).rollout;
    expect(rollout.gate.state).toBe('PASSED');
    expect(rollout.gate.analysisRuns).toHaveLength(1);
    const [run] = rollout.gate.analysisRuns;
    expect(run).toMatchObject({ attempt: 1, phase: 'SUCCESSFUL' });
    const numbers = run.measurements.map((m: { number: number }) => m.number);
    // Each number once, in order, none missing (WAITING ones included: they are numbered too).
    expect(numbers).toEqual(numbers.map((_: number, i: number) => i));
    expect(run.measurements.filter((m: { verdict: string }) => m.verdict === 'SUCCESSFUL')).toHaveLength(COUNT);
    for (let i = 1; i <= 3; i++) expect(r.agent(`net-${i}`)!.spec.containers[0].image).toBe(NEW);
  }, 240_000);
});
