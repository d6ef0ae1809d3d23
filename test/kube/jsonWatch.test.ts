import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BudgetedKubeConfig } from '../../src/kube/createKubeClients.js';
import { JsonWatch } from '../../src/kube/jsonWatch.js';

// The watch stream read straight off node's http response (src/kube/jsonWatch.ts), against a server that writes the
// stream in awkward pieces: the same events, the same end, the same errors as client-node's Watch.

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

async function serve(handler: http.RequestListener): Promise<JsonWatch> {
  server = http.createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const kc = new BudgetedKubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}/base`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return new JsonWatch(kc);
}

function run(watch: JsonWatch, query: Record<string, unknown> = {}) {
  const events: [string, unknown][] = [];
  let controller: AbortController | undefined;
  const ended = new Promise<unknown>((resolve) => {
    watch.watch('/api/v1/pods', query, (type, obj) => events.push([type, obj]), resolve).then((c) => (controller = c));
  });
  return { events, ended, abort: () => controller?.abort() };
}

describe('JsonWatch', () => {
  it('delivers each event line, however the stream is cut (inside a line, inside a UTF-8 character), skips a line that is not JSON, and ends with done(null)', async () => {
    let seen: http.IncomingMessage | undefined;
    const watch = await serve((req, res) => {
      seen = req;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const stream = Buffer.from(
        '{"type":"ADDED","object":{"metadata":{"name":"café"}}}\n' +
          'not json\n' +
          '\n' +
          '{"type":"MODIFIED","object":{"metadata":{"name":"b"}}}\n' +
          '{"type":"DELETED","object":{"metadata":{"name":"c"}}}',
        'utf8',
      );
      const cut = stream.indexOf(Buffer.from('é')) + 1; // between the two bytes of "é"
      const pieces = [stream.subarray(0, 5), stream.subarray(5, cut), stream.subarray(cut, cut + 40), stream.subarray(cut + 40)];
      let i = 0;
      const next = () => (i < pieces.length ? res.write(pieces[i++], () => setImmediate(next)) : res.end());
      next();
    });
    const w = run(watch, { resourceVersion: '42', labelSelector: 'a=b', fieldSelector: undefined });
    expect(await w.ended).toBeNull();
    expect(w.events).toEqual([
      ['ADDED', { metadata: { name: 'café' } }],
      ['MODIFIED', { metadata: { name: 'b' } }],
      ['DELETED', { metadata: { name: 'c' } }],
    ]);
    // The request client-node would send: the server's path prefix, watch=true, the query without undefined values,
    // and the kubeconfig's credentials.
    const url = new URL(seen!.url!, 'http://x');
    expect(url.pathname).toBe('/base/api/v1/pods');
    expect(Object.fromEntries(url.searchParams)).toEqual({ watch: 'true', resourceVersion: '42', labelSelector: 'a=b' });
    expect(seen!.headers.authorization).toBe('Bearer secret-token');
  });

  it('ends with an error carrying the status code when the answer is not 200 (410: the informer relists)', async () => {
    const watch = await serve((_req, res) => {
      res.writeHead(410, { 'Content-Type': 'application/json' });
      res.end('{"kind":"Status","code":410,"reason":"Expired"}');
    });
    const w = run(watch);
    expect(await w.ended).toMatchObject({ statusCode: 410 });
    expect(w.events).toEqual([]);
  });

  it('stops delivering once aborted, and reports the end once', async () => {
    let res: http.ServerResponse | undefined;
    const watch = await serve((_req, r) => {
      res = r;
      r.writeHead(200);
      r.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
    });
    let ends = 0;
    const events: string[] = [];
    const controller = await new Promise<AbortController>((resolve) => {
      let c: AbortController | undefined;
      watch
        .watch(
          '/api/v1/pods',
          {},
          (type) => {
            events.push(type);
            if (c) resolve(c);
          },
          () => ends++,
        )
        .then((made) => {
          c = made;
          if (events.length > 0) resolve(made);
        });
    });
    controller.abort();
    res?.write('{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(events).toEqual(['ADDED']);
    expect(ends).toBe(1);
  });
});
