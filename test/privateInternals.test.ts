import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApolloServer, HeaderMap } from '@apollo/server';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { HistogramFamily, ValueFamily } from '../src/controller/hotMetrics.js';
import { rawSocketOf, textFrames } from '../src/graphql/textFrames.js';
import { loadKubeConfig } from '../src/kube/createKubeClients.js';
import { writeKubeconfig } from '../src/sim/kubeconfig.js';
import { until } from './helpers/until.js';

/**
 * Canaries: one per place where rollplane leans on a dependency's private internals (docs/private-internals.md lists
 * them with the condition under which each can go). Each checks the behaviour rollplane relies on, not merely that a
 * name exists, so that an upgrade of the dependency that breaks the assumption fails here, by name, rather than as a
 * silent slowdown or a wrong answer somewhere else. When one fails after an upgrade: read the entry in
 * docs/private-internals.md, then either adapt the workaround or take its exit.
 */

describe('ws: the TCP socket under a WebSocket (`_socket`), written to directly by the fan-out', () => {
  let server: WebSocketServer;
  let url: string;
  beforeAll(async () => {
    // As the subscription server makes it: no permessage-deflate option, so ws negotiates none (ws's server default).
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('is a net.Socket under `_socket`, no extension is negotiated by default, and ws queues nothing of its own', async () => {
    const accepted = once(server, 'connection');
    // A client that offers permessage-deflate (ws's client default, as browsers do): the server must still negotiate none.
    const client = new WebSocket(url);
    const received: string[] = [];
    client.on('message', (data) => received.push(String(data)));
    const [socket] = (await accepted) as [WebSocket];
    await once(client, 'open');
    expect(socket.extensions).toBe('');
    const raw = rawSocketOf(socket);
    expect(raw, 'ws no longer keeps the TCP socket in `_socket`: the fan-out would fall back to ws.send per message').toBeDefined();
    // ws's Sender writes a frame synchronously when nothing is being compressed: the TCP socket's own count grew in the
    // same step, so frames written directly and ws's own messages cannot overtake one another, and bufferedAmount
    // (the fan-out's budget) counts both.
    raw!.cork();
    const before = raw!.writableLength;
    socket.send('by ws');
    expect(raw!.writableLength).toBeGreaterThan(before);
    expect(socket.bufferedAmount).toBe(raw!.writableLength);
    raw!.write(textFrames(Buffer.from('{"n":'), [Buffer.from('1')], Buffer.from('}')));
    expect(socket.bufferedAmount).toBe(raw!.writableLength);
    raw!.uncork();
    await until('both messages arrived', () => received.length >= 2);
    expect(received).toEqual(['by ws', '{"n":1}']);
    client.close();
    await once(client, 'close');
  });
});

describe("client-node: KubeConfig's private `createAgent`, replaced to keep connections alive", () => {
  let server: http.Server;
  let connections = 0;
  let dir: string;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
    });
    server.on('connection', () => connections++);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    dir = mkdtempSync(path.join(tmpdir(), 'rollplane-canary-'));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('is a method every typed request goes through, so that one kept-alive agent serves them all', async () => {
    expect(typeof (KubeConfig.prototype as unknown as { createAgent?: unknown }).createAgent).toBe('function');
    const file = await writeKubeconfig({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, path: path.join(dir, 'kubeconfig') });
    const core = loadKubeConfig({ mode: 'kubeconfig', kubeconfigPath: file }).makeApiClient(CoreV1Api);
    connections = 0;
    for (let i = 0; i < 3; i++) await core.listNamespace();
    // Unpatched, client-node 1.4 builds a new agent per request: three requests, three connections.
    expect(connections).toBe(1);
  });
});

describe("prom-client: `registerMetric` taking rollplane's own metric families (duck-typed, not prom-client's classes)", () => {
  it('registers them and formats what their get() returns, in text and JSON', async () => {
    const registry = new Registry();
    const counter = new ValueFamily(registry, 'counter', 'canary_adds_total', 'Adds.', ['queue']);
    const histogram = new HistogramFamily(registry, 'canary_seconds', 'Seconds.', ['queue'], [0.1, 1]);
    counter.child('q').value += 3;
    histogram.child('q').observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE canary_adds_total counter');
    expect(text).toContain('canary_adds_total{queue="q"} 3');
    expect(text).toContain('canary_seconds_bucket{le="0.1",queue="q"} 0');
    expect(text).toContain('canary_seconds_bucket{le="1",queue="q"} 1');
    expect(text).toContain('canary_seconds_bucket{le="+Inf",queue="q"} 1');
    expect(text).toContain('canary_seconds_count{queue="q"} 1');
    expect(registry.getSingleMetric('canary_adds_total')).toBe(counter);
    const json = await registry.getMetricsAsJSON();
    expect(json.find((m) => m.name === 'canary_adds_total')?.values).toEqual([{ value: 3, labels: { queue: 'q' } }]);
    // reset() is what prom-client calls on registry.resetMetrics().
    registry.resetMetrics();
    expect(await registry.metrics()).toContain('canary_adds_total{queue="q"} 0');
  });
});

describe("Apollo Server: what the response cache's plugin relies on beyond the documented hooks", () => {
  it("sets the response body before executionDidEnd, and hands a plugin-made answer's very data object to stringifyResult", async () => {
    const kept = { n: 41 };
    let bodyAtEnd: unknown;
    const stringified: unknown[] = [];
    const apollo = new ApolloServer({
      typeDefs: 'type Query { n: Int }',
      resolvers: { Query: { n: () => 42 } },
      stringifyResult: (result) => {
        stringified.push(result.data);
        return JSON.stringify(result);
      },
      plugins: [
        {
          async requestDidStart() {
            return {
              async responseForOperation(ctx) {
                return ctx.operationName === 'Kept'
                  ? { http: { headers: new HeaderMap(), status: undefined }, body: { kind: 'single', singleResult: { data: kept } } }
                  : null;
              },
              async executionDidStart(ctx) {
                return {
                  async executionDidEnd() {
                    bodyAtEnd = ctx.response.body;
                  },
                };
              },
            };
          },
        },
      ],
    });
    await apollo.start();
    try {
      const send = (query: string) =>
        apollo.executeHTTPGraphQLRequest({
          httpGraphQLRequest: { method: 'POST', headers: new HeaderMap([['content-type', 'application/json']]), search: '', body: { query } },
          context: async () => ({}),
        });
      const ran = await send('query Ran { n }');
      // Without the body here, the plugin would never keep an answer (and the cache would silently never hit).
      expect(bodyAtEnd).toMatchObject({ kind: 'single', singleResult: { data: { n: 42 } } });
      expect(ran.body.kind === 'complete' && ran.body.string).toBe('{"data":{"n":42}}');
      const served = await send('query Kept { n }');
      // The same object: ResponseCache.serialized finds the kept answer's JSON by it instead of serializing again.
      expect(stringified.at(-1)).toBe(kept);
      expect(served.body.kind === 'complete' && served.body.string).toBe('{"data":{"n":41}}');
    } finally {
      await apollo.stop();
    }
  });
});
