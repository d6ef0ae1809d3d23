import { KIND_CONTRACTS } from '../../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, gql, wsClient } from '../../helpers/graphql.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { startService } from '../../helpers/child.js';
import { until } from '../../helpers/until.js';
import { defaultStrategy } from '../../../src/domain/kinds/index.js';

describe('health, readiness and metrics', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('/healthz says the process is alive', async () => {
    const res = await fetch(`${app.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('/readyz checks the database and Kubernetes', async () => {
    const res = await fetch(`${app.baseUrl}/readyz`);
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(body.checks.map((c: any) => [c.name, c.ok])).toEqual(
      expect.arrayContaining([
        ['database', true],
        ['kubernetes', true],
      ]),
    );
  });

  it('/metrics exposes process metrics and rollplane counters in Prometheus text format', async () => {
    await gql(app.url, '{ serverInfo { version } }');
    const res = await fetch(`${app.baseUrl}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toContain('process_cpu_seconds_total');
    expect(text).toMatch(/rollplane_graphql_operations_total\{field="serverInfo",type="query",result="ok",transport="http"\} [1-9]/);
    expect(text).toContain('# TYPE rollplane_subscriptions_active gauge');
  });

  it('/metrics counts active rollouts per kind from the store and finished ones per final state', async () => {
    const create = () =>
      app.domain.rollouts.create({
        kind: 'VIRTUAL_CLUSTER',
        fromVersion: '1',
        toVersion: '2',
        selector: {},
        strategy: defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER),
        cause: {},
        targets: [],
      });
    const { rollout } = await create();
    await create();
    let text = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(text).toContain('rollplane_rollouts_active{kind="VIRTUAL_CLUSTER"} 2');
    expect(text).toContain('rollplane_rollouts_active{kind="NODE_AGENT"} 0');
    await app.domain.rollouts.abort(rollout.id, 'test');
    text = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(text).toContain('rollplane_rollouts_active{kind="VIRTUAL_CLUSTER"} 1');
    expect(text).toContain('rollplane_rollouts_finished_total{kind="VIRTUAL_CLUSTER",state="ABORTED"} 1');
  });

  it('answers 404 with a code for unknown paths', async () => {
    const res = await fetch(`${app.baseUrl}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('/readyz fails when Kubernetes is unreachable', async () => {
    await app.kube.stop();
    const res = await fetch(`${app.baseUrl}/readyz`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as any;
    const kubernetes = body.checks.find((c: any) => c.name === 'kubernetes');
    expect(kubernetes).toMatchObject({ ok: false });
    // /readyz answers anyone: it says why in a code, never where the API server is (attack finding).
    expect(kubernetes.error).toMatch(/^the Kubernetes API is unreachable( \(\S+\))?$/);
    const server = new URL(app.kube.kubeConfig.getCurrentCluster()!.server);
    expect(JSON.stringify(body)).not.toContain(server.host);
    expect(JSON.stringify(body)).not.toContain(server.port);
  });
});

describe('the service process', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-proc-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints its real URL, then on SIGTERM closes subscriptions and exits 0 well within 10 s', async () => {
    const service = await startService({ DATABASE_URL: `file:${path.join(dir, 'a.db')}` });
    expect(service.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
    expect(service.url).not.toContain(':0/');
    const client = wsClient(service.url);
    const sub = collect(client, 'subscription { events { id } }');
    const info = await gql(service.url, '{ serverInfo { version kubeMode } }');
    expect(info.data.serverInfo.kubeMode).toBe('sim');
    // The subscription is open on the server (its gauge counts it) before the signal is sent.
    const metricsUrl = service.url.replace(/\/graphql$/, '/metrics');
    await until('the subscription to be open on the server', async () => /^rollplane_subscriptions_active 1$/m.test(await (await fetch(metricsUrl)).text()));
    const started = Date.now();
    service.child.kill('SIGTERM');
    const exit = await service.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(10_000);
    await sub.waitFor(1, 5_000);
    expect(sub.isCompleted() || sub.errors.length > 0).toBe(true);
    await client.dispose();
  });
});
