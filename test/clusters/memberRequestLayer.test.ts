import { setMaxListeners } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listFailure } from '../../src/clusters/MemberConnection.js';
import { MemberKubeConfig } from '../../src/clusters/MemberKubeConfig.js';
import { type KubeClients, kubeClientsOf } from '../../src/kube/createKubeClients.js';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { type MemberProxy, startMemberProxy } from '../helpers/memberProxy.js';
import { until } from '../helpers/until.js';

/**
 * The member request layer (src/kube/resetRetry.ts, docs/adr/0073-member-request-retry.md) against a member behind a
 * proxy of the test that resets chosen requests (the connection closed under them, as a server's idle timeout does):
 * a safe request (a read, a list, a dry run, a watch's establishment) reset on a reused connection is sent once more;
 * a write is not, and fails with the reset; a fresh connection's reset is not retried either. And a list answer cut
 * off by rollplane's own timeout says so and names the setting, one closed by the member does not blame the timeout
 * (attack 17, L3).
 */
describe('the member request layer', () => {
  const TIMEOUT_MS = 1500;
  let fleet: SimulatedClusters;
  let proxy: MemberProxy;
  let source: KubeConfig;
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  /** Requests seen by the proxy, as `METHOD path`. */
  const seen: string[] = [];
  /** The test's say in each request: true when it handled it (reset, cut), false to pass it on. */
  let intercept: (req: IncomingMessage, res: ServerResponse) => boolean = () => false;

  const clientsOf = (): KubeClients =>
    kubeClientsOf(MemberKubeConfig.from(source, { qps: 1000, burst: 1000, requestTimeoutMs: TIMEOUT_MS, signal: stop.signal }));
  const count = (what: string) => seen.filter((s) => s === what).length;
  /** Resets the first request that `matches`, passes every other. */
  const resetFirst = (matches: (req: IncomingMessage) => boolean) => {
    let done = false;
    intercept = (req) => {
      if (done || !matches(req)) return false;
      done = true;
      req.socket.destroy();
      return true;
    };
  };
  const pod = (name: string) => ({
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'registry.example/agent:v1.0.0' }] },
  });

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: [{ name: 'edge-1', fleet: 'pools=1,nodes=1' }] });
    const member = fleet.clusters.get('edge-1')!;
    proxy = await startMemberProxy(member.url, {
      intercept: (req, res) => {
        seen.push(`${req.method} ${req.url}`);
        return intercept(req, res);
      },
    });
    source = new KubeConfig();
    source.loadFromString(member.kubeconfig.replaceAll(member.url, proxy.url));
  });
  afterEach(() => {
    intercept = () => false;
  });
  afterAll(async () => {
    stop.abort();
    await proxy?.close();
    await fleet?.stop();
  });

  const PODS = '/api/v1/namespaces/default/pods';
  const IPPOOLS = '/apis/network.harvesterhci.io/v1alpha1/namespaces/default/ippools';
  const listPools = (clients: KubeClients) =>
    clients.custom.listNamespacedCustomObject({ group: 'network.harvesterhci.io', version: 'v1alpha1', namespace: 'default', plural: 'ippools' });

  it('sends a read and a list reset on a reused connection once more, and they succeed', async () => {
    const clients = clientsOf();
    await clients.core.listNamespace(); // a kept connection
    resetFirst((req) => req.method === 'GET' && req.url === IPPOOLS);
    const list = (await listPools(clients)) as { items: unknown[] };
    expect(list.items.length).toBeGreaterThan(0);
    expect(count(`GET ${IPPOOLS}`)).toBe(2);

    resetFirst((req) => req.url === '/version');
    await expect(clients.kubeConfig.makeApiClient((await import('@kubernetes/client-node')).VersionApi).getCode()).resolves.toMatchObject({
      major: expect.any(String),
    });
  });

  it('sends a dry run reset on a reused connection once more, and never a write', async () => {
    const clients = clientsOf();
    await clients.core.listNamespace();
    resetFirst((req) => req.method === 'POST' && req.url === `${PODS}?dryRun=All`);
    await clients.core.createNamespacedPod({ namespace: 'default', body: pod('dry'), dryRun: 'All' });
    expect(count(`POST ${PODS}?dryRun=All`)).toBe(2);

    await clients.core.listNamespace();
    resetFirst((req) => req.method === 'POST' && req.url === PODS);
    await expect(clients.core.createNamespacedPod({ namespace: 'default', body: pod('real') })).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(count(`POST ${PODS}`)).toBe(1);
    await expect(clients.core.readNamespacedPod({ namespace: 'default', name: 'real' })).rejects.toMatchObject({ code: 404 });
  });

  it('reopens a watch whose establishment was reset on a reused connection', async () => {
    const clients = clientsOf();
    await clients.core.listNamespace();
    const watched = () => seen.filter((s) => s.startsWith(`GET ${PODS}?watch=true`)).length;
    const before = watched();
    resetFirst((req) => req.method === 'GET' && (req.url ?? '').startsWith(`${PODS}?watch=true`));
    const ended: unknown[] = [];
    const events: string[] = [];
    const watch = await clients.watch.watch(
      PODS,
      {},
      (type) => events.push(type),
      (error) => ended.push(error),
    );
    await clients.core.createNamespacedPod({ namespace: 'default', body: pod('watched') });
    await until('the reopened watch hears the new pod', () => events.includes('ADDED'));
    expect(watched() - before).toBe(2);
    expect(ended).toEqual([]);
    watch.abort();
  });

  it('does not retry a reset of a fresh connection', async () => {
    const clients = clientsOf(); // its own agent: no connection yet
    resetFirst((req) => req.method === 'GET' && req.url === IPPOOLS);
    const before = count(`GET ${IPPOOLS}`);
    await expect(listPools(clients)).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(count(`GET ${IPPOOLS}`) - before).toBe(1);
  });

  it('names the timeout setting for a list the timeout cut off, and not for one the member closed (attack 17, L3)', async () => {
    const clients = clientsOf();
    const halfAnswer = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"kind":"IPPoolList","apiVersion":"network.harvesterhci.io/v1alpha1","items":[');
    };
    intercept = (req, res) => {
      if (req.url !== IPPOOLS) return false;
      halfAnswer(res); // then nothing
      return true;
    };
    const cut = await listPools(clients).catch((e: unknown) => e);
    expect(listFailure('ippools', cut, TIMEOUT_MS)).toBe(
      `ippools list: the answer was cut off by the request timeout (${TIMEOUT_MS} ms, ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS) before its end`,
    );

    intercept = (req, res) => {
      if (req.url !== IPPOOLS) return false;
      halfAnswer(res);
      setImmediate(() => req.socket.destroy()); // the member closes it
      return true;
    };
    const closed = await listPools(clients).catch((e: unknown) => e);
    const text = listFailure('ippools', closed, TIMEOUT_MS);
    expect(text).not.toContain('TIMEOUT');
    expect(text).not.toContain('no answer within');
    expect(text).toMatch(/^ippools list: .*cut off before its end \(the connection was closed\)$/);
  });
});
