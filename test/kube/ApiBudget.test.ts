import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/util/FakeClock.js';
import { createKubeClients } from '../../src/kube/createKubeClients.js';
import type { ApiBudget } from '../../src/kube/ApiBudget.js';
import { until } from '../helpers/until.js';

// A bare HTTP endpoint that counts what reaches it: the budget is a client-side property, so what matters is how
// many requests arrive, not what the server says.
let server: Server;
let received: string[];
let dir: string;
let kubeconfigPath: string;

beforeEach(async () => {
  received = [];
  server = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    res.setHeader('Content-Type', 'application/json');
    if (req.url?.includes('watch=true')) {
      res.write(JSON.stringify({ type: 'ADDED', object: { kind: 'Namespace', metadata: { name: 'a', resourceVersion: '1' } } }) + '\n');
      res.end();
      return;
    }
    res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  dir = mkdtempSync(path.join(tmpdir(), 'rollplane-budget-'));
  kubeconfigPath = path.join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfigPath,
    `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true }
users:
- name: u
  user: { token: t }
contexts:
- name: ctx
  context: { cluster: c, user: u }
current-context: ctx
`,
  );
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Waits until `seen` holds n requests and returns how many the budget has admitted. Every request takes a token before
 * it is sent and tokens come only from the fake clock, so once n arrived and n were admitted no further one can
 * arrive until the clock moves: that is the signal that the count stays, not a wait on time.
 */
async function settle(budget: ApiBudget, seen: string[], n: number): Promise<number> {
  await until(`${n} requests at the server (have ${seen.length})`, () => seen.length >= n, 10_000);
  expect(seen.length).toBe(n);
  return budget.admitted;
}

describe('API budget', () => {
  it('lets a burst through, then one request per 1/qps of (fake) time, for typed calls and watches alike', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const kube = createKubeClients({ mode: 'kubeconfig', kubeconfigPath, qps: 10, burst: 3, clock, registry });
    const calls = Array.from({ length: 5 }, () => kube.core.listNamespace());
    const watchDone = new Promise<void>(
      (resolve) =>
        void kube.watch.watch(
          '/api/v1/namespaces',
          {},
          () => {},
          () => resolve(),
        ),
    );
    expect(await settle(kube.budget, received, 3)).toBe(3);
    await clock.advance(100);
    expect(await settle(kube.budget, received, 4)).toBe(4);
    await clock.advance(99); // fires due fake timers and lets their continuations run: a token given now is counted now
    expect(kube.budget.admitted).toBe(4);
    expect(received.length).toBe(4);
    await clock.advance(1);
    expect(await settle(kube.budget, received, 5)).toBe(5);
    await clock.advance(100);
    expect(await settle(kube.budget, received, 6)).toBe(6);
    await Promise.all(calls);
    await watchDone;
    expect(received.filter((r) => r.includes('watch=true'))).toHaveLength(1);
    expect(kube.budget.admitted).toBe(6);
    // 3 requests waited 100, 200 and 300 ms.
    expect(kube.budget.waitedMs).toBe(600);
    const text = await registry.metrics();
    expect(text).toContain('rollplane_kube_client_rate_limiter_wait_seconds_count 6');
    expect(text).toContain('rollplane_kube_client_rate_limiter_wait_seconds_sum 0.6');
    expect(text).toContain('rollplane_kube_client_requests_total 6');
  });
});

describe('API budget against the simulator', () => {
  it('limits every client (typed calls, custom objects, watches) of one createKubeClients to one rate', async () => {
    const { startSimulator } = await import('../../src/sim/index.js');
    const sim = await startSimulator({ behaviour: false });
    try {
      const seen: string[] = [];
      const inner = sim.api.hooks.beforeRequest?.bind(sim.api.hooks);
      sim.api.hooks.beforeRequest = async (info) => {
        seen.push(`${info.verb} ${info.resource.plural}`);
        await inner?.(info);
      };
      const clock = new FakeClock();
      const registry = new Registry();
      const kube = createKubeClients({ mode: 'sim', kubeconfigPath: sim.kubeconfigPath, qps: 5, burst: 2, clock, registry });
      const calls: Promise<unknown>[] = [
        kube.core.listNamespacedConfigMap({ namespace: 'default' }),
        kube.apps.listNamespacedDeployment({ namespace: 'default' }),
        kube.coordination.listNamespacedLease({ namespace: 'default' }),
        kube.custom.listNamespacedCustomObject({ group: 'network.harvesterhci.io', version: 'v1alpha1', namespace: 'default', plural: 'ippools' }),
      ];
      let watchAbort: AbortController | undefined;
      calls.push(
        kube.watch
          .watch(
            '/api/v1/namespaces/default/configmaps',
            {},
            () => {},
            () => {},
          )
          .then((c) => (watchAbort = c)),
      );
      expect(await settle(kube.budget, seen, 2)).toBe(2); // the burst
      for (let n = 3; n <= 5; n++) {
        await clock.advance(199);
        expect(kube.budget.admitted).toBe(n - 1);
        expect(seen.length).toBe(n - 1);
        await clock.advance(1); // one token per 200 ms at 5 QPS
        expect(await settle(kube.budget, seen, n)).toBe(n);
      }
      await Promise.all(calls);
      watchAbort?.abort();
      expect(seen.some((s) => s.startsWith('watch '))).toBe(true);
      expect(kube.budget.admitted).toBe(5);
      expect(await registry.metrics()).toContain('rollplane_kube_client_rate_limiter_wait_seconds_sum 1.2');
    } finally {
      await sim.stop();
    }
  });
});
