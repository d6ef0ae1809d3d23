import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PrometheusClient, PrometheusError } from '../../src/analysis/PrometheusClient.js';

/**
 * Bad servers where a Prometheus should be: each answer is a recorded error with a reason, never a crash or a pass.
 * (What a real Prometheus answers — vectors, scalars, matrices, strings, refused queries — is in
 * prometheusAnalysis.test.ts, against Debian's prometheus.)
 */

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

async function failure(client: PrometheusClient, query = 'up'): Promise<PrometheusError> {
  const error = await client.query(query).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PrometheusError);
  return error as PrometheusError;
}

describe('the Prometheus client against bad servers', () => {
  it('an unreachable server', async () => {
    const url = await serve(() => {});
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    const error = await failure(new PrometheusClient(url));
    expect(error.reason).toBe('UNREACHABLE');
    expect(error.message).toMatch(/cannot reach Prometheus at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
  });

  it('a server that does not answer in time: bounded by the timeout, and Prometheus is told the timeout too', async () => {
    let sent = '';
    const url = await serve((req) => {
      req.setEncoding('utf8').on('data', (chunk: string) => {
        sent += chunk;
      });
    });
    const error = await failure(new PrometheusClient(url, { timeoutMs: 300 }));
    expect(error.reason).toBe('TIMEOUT');
    expect(error.message).toMatch(/no answer from .* within 300 ms/);
    expect(new URLSearchParams(sent).get('timeout')).toBe('270ms');
  });

  it('a huge answer, by its length or as it streams, and a compressed one it was not asked for', async () => {
    const declared = await serve((_req, res) => res.writeHead(200, { 'content-length': String(2 * 1024 * 1024) }).end('x'.repeat(2 * 1024 * 1024)));
    expect((await failure(new PrometheusClient(declared))).reason).toBe('TOO_LARGE');
    await new Promise((resolve) => server!.close(resolve));
    const streamed = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(64 * 1024);
      const write = () => {
        while (res.write(chunk)) {}
      };
      res.on('drain', write);
      write();
    });
    const error = await failure(new PrometheusClient(streamed, { maxBytes: 256 * 1024 }));
    expect(error.reason).toBe('TOO_LARGE');
    expect(error.message).toMatch(/more than 262144 bytes/);
    server?.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
    const gzipped = await serve((_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end('\x1f\x8b'));
    expect((await failure(new PrometheusClient(gzipped))).message).toMatch(/Content-Encoding gzip/);
  });

  it('an answer that is not the query API: not JSON, an error status, a redirect, a bad sample', async () => {
    let answer: { status: number; body: string; headers?: Record<string, string> } = { status: 503, body: '<html>down</html>' };
    const url = await serve((_req, res) => res.writeHead(answer.status, answer.headers ?? {}).end(answer.body));
    const client = new PrometheusClient(url);
    expect(await failure(client)).toMatchObject({ reason: 'BAD_ANSWER', message: expect.stringMatching(/HTTP 503 with something that is not JSON/) });
    // What any other service answers is not quoted to the gate's readers (attack 19, F2: rollplane's own /metrics, a
    // page with a token, read back by a viewer).
    answer = { status: 200, body: '# HELP secret_total token=SEKRIT', headers: { 'content-type': 'text/plain' } };
    expect((await failure(client)).message).not.toMatch(/SEKRIT|HELP/);
    expect((await failure(client)).message).toMatch(/not JSON \(text\/plain, 32 characters\)/);
    // A refusal's own text is kept, without the control characters that would redraw a terminal (F7).
    answer = { status: 422, body: JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error\u001b[2K\r\u001b[32mPASSED' }) };
    expect((await failure(client)).message).toBe('Prometheus refused the query (bad_data): parse error [2K  [32mPASSED');
    answer = { status: 502, body: '{}' };
    expect((await failure(client)).reason).toBe('HTTP_STATUS');
    answer = { status: 302, body: '', headers: { location: 'http://169.254.169.254/' } };
    expect((await failure(client)).reason).toBe('UNREACHABLE');
    answer = { status: 200, body: JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1, 'lots'] }] } }) };
    expect(await failure(client)).toMatchObject({ reason: 'BAD_ANSWER', message: expect.stringMatching(/not a number: "lots"/) });
    answer = {
      status: 200,
      body: JSON.stringify({
        status: 'success',
        data: {
          resultType: 'vector',
          result: [
            { metric: {}, value: [1, 'NaN'] },
            { metric: {}, value: [1, '+Inf'] },
          ],
        },
      }),
    };
    const ok = await client.query('up');
    expect(ok.type === 'vector' && ok.samples.map((s) => s.value)).toEqual([Number.NaN, Number.POSITIVE_INFINITY]);
  });
});
