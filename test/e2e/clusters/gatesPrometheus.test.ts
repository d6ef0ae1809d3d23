import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { verifySignature } from '../../../src/domain/notifications/signature.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { startCli } from '../../cli/cliHarness.js';
import { gql } from '../../helpers/graphql.js';
import { MEMBER_FLEET_ENV, memberPool as memberPoolOf, registerMembers } from '../../helpers/memberFleet.js';
import { describeWithPrometheus, startTestPrometheus, type TestPrometheus } from '../../helpers/prometheus.js';
import { until } from '../../helpers/until.js';

/**
 * The gates that decide on evidence, wired into a staged rollout over HTTP (issues 30 and 33, ADR 0068): the real app
 * on port 0 with three simulated member clusters; Debian's Prometheus scraping each member's agents (job = the
 * cluster's name) and a control endpoint of the test's (a gauge that makes an alert fire, and an external check).
 * - ANALYSIS after the canary wave stops a rollout of a degraded-but-Ready image (the simulator's `*:degraded*` agents
 *   are Ready and serve no leases), keeps every measurement, re-runs on retryGate, and passes a good image;
 * - ALERT holds a wave while a named alert fires, and lets it go once it resolved;
 * - EXTERNAL_CHECK asks a local HTTP server, signed with a secret the gate only names: wait, fail, proceed, each
 *   attempt kept; too many failures fail the gate.
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const GOOD = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
const DEGRADED = 'rancher/harvester-vm-dhcp-agent:degraded-v0.3.1';
const MEMBERS = ['edge-1', 'edge-2', 'edge-3'];
const POOLS = ['net-1', 'net-2'];
const SECRET = 'a-signing-secret-only-the-operator-knows';

const TEMPLATE = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: dhcp-health }
spec:
  args: [{ name: cluster }, { name: version }]
  metrics:
  - name: leases
    interval: 1s
    count: 3
    successCondition: result[0] > 0
    noData: WAIT(30s)
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_leases_total{job=~"{{args.cluster}}",version="{{args.version}}"}[5s]))
  - name: errors
    interval: 1s
    count: 3
    failureCondition: result[0] > 0
    noData: WAIT(30s)
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_errors_total{job=~"{{args.cluster}}",version="{{args.version}}"}[5s]))
`;

const RULES = `
groups:
- name: rollplane-gates-test
  rules:
  - alert: MaintenanceHold
    expr: rollplane_test_hold > 0
`;

const ROLLOUT = `query ($id: ID!, $gate: String!) { rollout(id: $id) {
  state message
  wavePlan { waves { name state } }
  gates { key type config state reason }
  gate(key: $gate) {
    key type config state reason
    attempts { number answer retryAfterSeconds reason }
    analysisRuns { id attempt previousRunId phase message args measurements { metric number query values condition verdict } }
  }
} }`;

interface Control {
  url: string;
  hold: number;
  /** What /check answers next (the last one repeats). */
  answers: { status: number; body?: string }[];
  checks: { signature: string | undefined; body: string; at: number }[];
}

function startControl(): Promise<{ control: Control; server: Server }> {
  const control: Control = { url: '', hold: 0, answers: [{ status: 204 }], checks: [] };
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(`# TYPE rollplane_test_hold gauge\nrollplane_test_hold ${control.hold}\n`);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      control.checks.push({
        signature: req.headers['x-rollplane-signature'] as string | undefined,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      const answer = control.answers.length > 1 ? control.answers.shift()! : control.answers[0]!;
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body ?? '');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      control.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      resolve({ control, server });
    }),
  );
}

describeWithPrometheus('ANALYSIS, ALERT and EXTERNAL_CHECK gates of a staged rollout, against a real Prometheus', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane gates prometheus '));
  let fleet: SimulatedClusters;
  let prometheus: TestPrometheus;
  let app: TestApp;
  let control: Control;
  let server: Server;

  beforeAll(async () => {
    ({ control, server } = await startControl());
    fleet = await startSimulatedClusters({ clusters: MEMBERS.map((name) => ({ name, fleet: 'pools=2,nodes=2' })) });
    prometheus = await startTestPrometheus(
      [...MEMBERS.map((name) => ({ url: fleet.clusters.get(name)!.simulator.url, job: name })), { url: control.url, job: 'control' }],
      1000,
      { rules: RULES },
    );
    registerMembers(dir, fleet, MEMBERS, (name) => ({ tier: 'edge', ring: name.slice(-1) }));
    const secrets = path.join(dir, 'check-secrets.yaml');
    writeFileSync(secrets, stringify({ checks: SECRET }), { mode: 0o600 });
    app = await startTestApp({
      databaseFile: path.join(dir, 'rollplane.db'),
      env: {
        ...MEMBER_FLEET_ENV,
        ROLLPLANE_SIM_FLEET: 'pools=2,nodes=2',
        ROLLPLANE_PROMETHEUS_URL: prometheus.url,
        ROLLPLANE_EXTERNAL_CHECK_SECRETS_FILE: secrets,
        // The check endpoint is on loopback: allowed as a notification sink would be (the SSRF guard refuses it otherwise).
        ROLLPLANE_NOTIFY_ALLOW_NETWORKS: '127.0.0.0/8',
      },
    });
    await until('every member driven by its own runtime', () =>
      MEMBERS.every((name) => app.memberRuntimes?.snapshot().some((r) => r.cluster === name && r.running && r.kinds.includes('AGENT_POOL'))),
    );
    await prometheus.waitForSeries('sim_dhcp_leases_total', { min: MEMBERS.length * POOLS.length });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await prometheus?.stop();
    await fleet?.stop();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const image = (cluster: string, name: string) => memberPoolOf(fleet, cluster, name)?.status.agentPodRef.image;
  const images = (cluster: string) => POOLS.map((name) => image(cluster, name));
  const bump = async (imageTo: string, waves: unknown[]) => {
    const result = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id state } } }', {
      input: {
        image: imageTo,
        memberClusters: { labelSelector: 'tier=edge' },
        strategy: { maxUnavailable: '100%', autoRollback: false },
        waveStrategy: { waves },
        allowDowngrade: true,
      },
    });
    expect(result.errors).toBeUndefined();
    return result.data.bumpAgentImage.rollout.id as string;
  };
  /** The rollout, its gates, and the detail of its one gate `gate` (attempts, analysis runs, measurements). */
  const rollout = async (id: string, gate = 'after:canary') => {
    const result = await gql(app.url, ROLLOUT, { id, gate });
    expect(result.errors).toBeUndefined();
    return result.data.rollout;
  };
  /** Polled cheaply (the state alone: the API's cost limits count each poll), then read in full once. */
  const untilState = async (id: string, states: string[], gate?: string) => {
    await until(
      `rollout ${id} ${states.join(' or ')}`,
      async () => states.includes((await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state } }', { id })).data?.rollout?.state),
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    return rollout(id, gate);
  };
  const retry = (id: string, gate: string) =>
    gql(app.url, 'mutation ($id: ID!, $gate: String!) { retryGate(rolloutId: $id, gate: $gate) { key state reason } }', { id, gate });

  it('ANALYSIS after the canary wave stops a degraded-but-Ready image, keeps every measurement, re-runs on retry, and passes a good image', async () => {
    const waves = [
      { name: 'canary', clusters: { names: ['edge-1'] }, after: { type: 'ANALYSIS', config: { template: TEMPLATE } } },
      { name: 'rest', clusters: { labelSelector: 'ring in (2,3)' } },
    ];
    const id = await bump(DEGRADED, waves);
    const paused = await untilState(id, ['PAUSED', 'SUCCEEDED', 'FAILED']);
    expect(paused.state).toBe('PAUSED');
    expect(paused.message).toMatch(/wave canary failed: gate after:canary: analysis .* failed/);
    // The canary is on the degraded image (Ready: the rollout's targets succeeded); the next wave never started.
    expect(images('edge-1')).toEqual([DEGRADED, DEGRADED]);
    for (const cluster of ['edge-2', 'edge-3']) expect(images(cluster)).toEqual([OLD, OLD]);
    expect(paused.wavePlan.waves.map((w: { state: string }) => w.state)).toEqual(['FAILED', 'PENDING']);
    const { gate } = paused;
    expect(paused.gates).toEqual([expect.objectContaining({ key: 'after:canary', type: 'ANALYSIS', state: 'FAILED' })]);
    expect(gate).toMatchObject({ key: 'after:canary', type: 'ANALYSIS', state: 'FAILED', attempts: [] });
    const [run] = gate.analysisRuns;
    expect(run).toMatchObject({ attempt: 1, previousRunId: null, phase: 'FAILED', args: { cluster: 'edge-1', version: 'degraded-v0.3.1', wave: 'canary' } });
    // Why it decided: the resolved queries, the values and the verdicts are all there.
    const decided = run.measurements.filter((m: { verdict: string }) => m.verdict === 'FAILED');
    expect(decided.length).toBeGreaterThan(0);
    expect(decided[0].query).toMatch(/job=~"edge-1",version="degraded-v0\.3\.1"/);
    expect(run.measurements.map((m: { number: number; metric: string }) => `${m.metric}#${m.number}`)).toContain('leases#0');

    // The CLI prints them.
    const cli = await startCli(['rollout', 'gate', id, '--gate', 'after:canary', '--url', app.url]).done;
    expect(cli.stderr).toBe('');
    expect(cli.stdout).toMatch(/gate after:canary \(ANALYSIS\): FAILED/);
    expect(cli.stdout).toMatch(/leases #0 .* (FAILED|WAITING) values=/);
    expect(cli.stdout).toContain('query: sum(rate(sim_dhcp_leases_total{job=~"edge-1",version="degraded-v0.3.1"}[5s]))');

    // Bad retries change nothing; a retry of the failed gate measures again (a new run, linked) and the run resumes.
    expect((await retry(id, 'after:nope')).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await retry(id, 'before:canary')).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const retried = await startCli(['rollout', 'retry-gate', id, '--gate', 'after:canary', '--url', app.url]).done;
    expect(retried.stderr).toBe('');
    expect(retried.code).toBe(0);
    expect(retried.stdout).toMatch(/^gate after:canary \(ANALYSIS\): (WAITING|FAILED): /);
    const again = await until(
      'the retried analysis decided',
      async () => {
        const r = await rollout(id);
        return r.gate.analysisRuns.length === 2 && r.gate.analysisRuns[1].phase !== 'RUNNING' && r.state === 'PAUSED' ? r : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1000 },
    );
    expect(again.gate.analysisRuns[1]).toMatchObject({ attempt: 2, previousRunId: run.id, phase: 'FAILED' });
    for (const cluster of ['edge-2', 'edge-3']) expect(images(cluster)).toEqual([OLD, OLD]);
    expect((await gql(app.url, 'mutation ($id: ID!) { abortRollout(id: $id) { state } }', { id })).data.abortRollout.state).toBe('ABORTED');
    expect((await retry(id, 'after:canary')).errors?.[0]?.extensions?.code).toBe('CONFLICT'); // the run ended

    // A good image passes the same gate and the run goes on to every cluster.
    const good = await bump(GOOD, waves);
    const done = await untilState(good, ['PAUSED', 'SUCCEEDED', 'FAILED']);
    expect(done.state).toBe('SUCCEEDED');
    expect(done.gate).toMatchObject({ key: 'after:canary', state: 'PASSED' });
    expect(done.gate.analysisRuns[0]).toMatchObject({ phase: 'SUCCESSFUL', args: { version: 'v0.3.1' } });
    for (const cluster of MEMBERS) expect(images(cluster)).toEqual([GOOD, GOOD]);
  });

  it('ALERT holds a wave while a named alert fires, naming it, and lets it go once the alert resolved', async () => {
    control.hold = 1;
    await prometheus.waitForSeries('ALERTS{alertname="MaintenanceHold",alertstate="firing"}');
    const id = await bump(OLD, [
      { name: 'canary', clusters: { names: ['edge-1'] }, before: { type: 'ALERT', config: { alerts: ['MaintenanceHold'], recheck: '1s' } } },
    ]);
    // Looked at again and again, still holding, nothing changed: one row per change of answer, whose last look moves on
    // (ADR 0071: not a row per 1 s recheck).
    const looks = async () =>
      (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { gate(key: "before:canary") { attempts { startedAt at } } } }', { id })).data?.rollout?.gate
        ?.attempts ?? [];
    await until(
      'the alert gate asked again',
      async () => {
        const kept = await looks();
        return kept.length === 1 && Date.parse(kept[0].at) - Date.parse(kept[0].startedAt) >= 2000;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const held = await rollout(id, 'before:canary');
    expect(held.state).toBe('PROGRESSING');
    expect(held.gate).toMatchObject({ key: 'before:canary', type: 'ALERT', state: 'WAITING', reason: 'alerts firing: MaintenanceHold' });
    expect(held.gate.attempts[0]).toMatchObject({ number: 0, answer: 'WAIT', retryAfterSeconds: 1, reason: 'alerts firing: MaintenanceHold' });
    for (const cluster of MEMBERS) expect(images(cluster)).toEqual([GOOD, GOOD]);

    control.hold = 0;
    const done = await untilState(id, ['PAUSED', 'SUCCEEDED', 'FAILED'], 'before:canary');
    expect(done.state).toBe('SUCCEEDED');
    expect(done.gate).toMatchObject({ state: 'PASSED', reason: 'no alert firing among MaintenanceHold' });
    expect(done.gate.attempts.map((a: { answer: string }) => a.answer)).toEqual(['WAIT', 'PROCEED']);
    for (const cluster of MEMBERS) expect(images(cluster)).toEqual([OLD, OLD]);
  });

  it('EXTERNAL_CHECK: a signed POST whose answers wait, fail and proceed, each kept; too many failures fail the gate', async () => {
    // A secret must be named, never given: refused before anything is written.
    const refused = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }', {
      input: {
        image: GOOD,
        memberClusters: { labelSelector: 'tier=edge' },
        waveStrategy: {
          waves: [{ name: 'w', clusters: { names: ['edge-1'] }, before: { type: 'EXTERNAL_CHECK', config: { url: `${control.url}/check`, secret: SECRET } } }],
        },
      },
    });
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(refused.errors?.[0]?.message).toMatch(/waves\[0\]\.before\.config\.secret: must name a signing secret rollplane was given .*names: checks/);
    expect(refused.errors?.[0]?.message).not.toContain(SECRET);

    control.answers = [{ status: 200, body: '{"retryAfterSeconds": 1}' }, { status: 500, body: 'not yet' }, { status: 204 }];
    control.checks.length = 0;
    const check = { type: 'EXTERNAL_CHECK', config: { url: `${control.url}/check`, secret: 'checks', maxAttempts: 2, retryInterval: '1s' } };
    const id = await bump(GOOD, [{ name: 'canary', clusters: { names: ['edge-1', 'edge-2', 'edge-3'] }, before: check }]);
    const done = await untilState(id, ['PAUSED', 'SUCCEEDED', 'FAILED'], 'before:canary');
    expect(done.state).toBe('SUCCEEDED');
    const { gate } = done;
    expect(gate.config).toEqual(check.config); // the secret's name, never the secret
    expect(JSON.stringify(done)).not.toContain(SECRET);
    expect(gate).toMatchObject({ key: 'before:canary', type: 'EXTERNAL_CHECK', state: 'PASSED' });
    expect(gate.attempts.map((a: { number: number; answer: string }) => `${a.number}:${a.answer}`)).toEqual(['0:WAIT', '1:FAILURE', '2:PROCEED']);
    expect(gate.attempts[1].reason).toBe('HTTP 500: not yet');
    expect(control.checks).toHaveLength(3);
    for (const [i, sent] of control.checks.entries()) {
      expect(verifySignature(SECRET, sent.signature, sent.body, Math.floor(sent.at / 1000))).toBe(true);
      expect(JSON.parse(sent.body)).toMatchObject({ rolloutId: id, gate: 'before:canary', wave: 'canary', version: GOOD, attempt: i + 1 });
    }
    for (const cluster of MEMBERS) expect(images(cluster)).toEqual([GOOD, GOOD]);

    // Failures in a row past maxAttempts fail the gate: the run pauses (its failure policy), nothing started.
    control.answers = [{ status: 500, body: 'no' }];
    const failing = await bump(OLD, [{ name: 'canary', clusters: { names: ['edge-1'] }, before: check }]);
    const paused = await untilState(failing, ['PAUSED', 'SUCCEEDED', 'FAILED'], 'before:canary');
    expect(paused.state).toBe('PAUSED');
    expect(paused.message).toMatch(/gate before:canary: 127\.0\.0\.1:\d+ failed 2 times in a row; last: HTTP 500: no/);
    expect(paused.gate.attempts.map((a: { answer: string }) => a.answer)).toEqual(['FAILURE', 'FAILURE']);
    expect(images('edge-1')).toEqual([GOOD, GOOD]);
    // Only an analysis gate can be retried.
    expect((await retry(failing, 'before:canary')).errors?.[0]?.extensions?.code).toBe('CONFLICT');
  });
});
