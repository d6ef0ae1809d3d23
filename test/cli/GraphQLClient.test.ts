import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode, exitCodeOf, type RemoteError } from '../../src/cli/exitCodes.js';
import { GraphQLClient } from '../../src/cli/GraphQLClient.js';
import { backoffDelayMs, retryAfterMs } from '../../src/cli/retryPolicy.js';

type Reply = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

let server: http.Server | undefined;

/** A real HTTP server answering the n-th request with `replies[n]` (the last one repeats). */
async function serve(replies: Reply[]): Promise<{ url: string; requests: { headers: http.IncomingHttpHeaders; body: string }[] }> {
  const requests: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ headers: req.headers, body });
      replies[Math.min(requests.length - 1, replies.length - 1)]!(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`, requests };
}

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Reply =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
const ok = json(200, { data: { serverInfo: { lastEventId: '7' } } });

function client(url: string, delays: number[], extra: Partial<ConstructorParameters<typeof GraphQLClient>[0]> = {}) {
  return new GraphQLClient({ url, retries: 3, delay: async (ms) => void delays.push(ms), random: () => 1, ...extra });
}

describe('GraphQLClient', () => {
  it('sends the bearer token and JSON, and returns data', async () => {
    const { url, requests } = await serve([ok]);
    const data = await client(url, [], { token: 's3cret' }).request('query { serverInfo { lastEventId } }', { a: 1 });
    expect(data).toEqual({ serverInfo: { lastEventId: '7' } });
    expect(requests[0]!.headers.authorization).toBe('Bearer s3cret');
    expect(requests[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(requests[0]!.body)).toEqual({ query: 'query { serverInfo { lastEventId } }', variables: { a: 1 } });
  });

  it('retries 5xx with growing backoff, then succeeds', async () => {
    const delays: number[] = [];
    const { url, requests } = await serve([json(503, { errors: [{ message: 'down' }] }), json(502, {}), ok]);
    await client(url, delays).request('{ x }');
    expect(requests).toHaveLength(3);
    expect(delays).toEqual([250, 500]);
  });

  it('honours Retry-After on 429', async () => {
    const delays: number[] = [];
    const limited = json(429, { errors: [{ message: 'slow down', extensions: { code: 'RATE_LIMITED', retryAfterSeconds: 9 } }] }, { 'retry-after': '3' });
    const { url } = await serve([limited, ok]);
    await client(url, delays).request('{ x }');
    expect(delays).toEqual([3000]);
  });

  it('gives up after the retries with exit code 3', async () => {
    const delays: number[] = [];
    const { url, requests } = await serve([json(500, {})]);
    const error = await client(url, delays)
      .request('{ x }')
      .catch((e: unknown) => e);
    expect(requests).toHaveLength(4);
    expect(exitCodeOf(error)).toBe(ExitCode.Unreachable);
  });

  it('does not retry 401; UNAUTHENTICATED is exit code 3', async () => {
    const { url, requests } = await serve([json(401, { errors: [{ message: 'bad token', extensions: { code: 'UNAUTHENTICATED' } }] })]);
    const error = await client(url, [])
      .request('{ x }')
      .catch((e: unknown) => e);
    expect(requests).toHaveLength(1);
    expect((error as Error).message).toBe('bad token');
    expect(exitCodeOf(error)).toBe(ExitCode.Unreachable);
  });

  it('does not retry refusals: BAD_USER_INPUT is exit 2 with the field, CONFLICT exit 1', async () => {
    const { url, requests } = await serve([
      json(200, { errors: [{ message: 'input.image: bad', extensions: { code: 'BAD_USER_INPUT', field: 'input.image' } }] }),
      json(200, { errors: [{ message: 'busy', extensions: { code: 'CONFLICT' } }] }),
    ]);
    const bad = (await client(url, [])
      .request('{ x }')
      .catch((e: unknown) => e)) as RemoteError;
    expect(exitCodeOf(bad)).toBe(ExitCode.Usage);
    expect(bad.details.field).toBe('input.image');
    const conflict = await client(url, [])
      .request('{ x }')
      .catch((e: unknown) => e);
    expect(exitCodeOf(conflict)).toBe(ExitCode.Failed);
    expect(requests).toHaveLength(2);
  });

  it('retries UNAVAILABLE answered in a 200', async () => {
    const { url, requests } = await serve([json(200, { errors: [{ message: 'db busy', extensions: { code: 'UNAVAILABLE' } }] }), ok]);
    await client(url, []).request('{ x }');
    expect(requests).toHaveLength(2);
  });

  it('retries a connection that dies without an answer', async () => {
    const { url, requests } = await serve([(req) => req.socket.destroy(), ok]);
    await client(url, []).request('{ x }');
    expect(requests).toHaveLength(2);
  });

  it('reports an unreachable server as exit code 3', async () => {
    const { url } = await serve([ok]);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    const error = await client(url, [])
      .request('{ x }')
      .catch((e: unknown) => e);
    expect(exitCodeOf(error)).toBe(ExitCode.Unreachable);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
  });
});

describe('retry policy', () => {
  it('doubles the backoff up to its cap, scaled by jitter', () => {
    expect([0, 1, 2, 3, 10].map((n) => backoffDelayMs(n, () => 1))).toEqual([250, 500, 1000, 2000, 8000]);
    expect(backoffDelayMs(0, () => 0)).toBe(125);
  });

  it('reads Retry-After as seconds or a date, else the GraphQL hint, capped', () => {
    expect(retryAfterMs('2', undefined)).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), undefined, 4000)).toBe(6000);
    expect(retryAfterMs(null, 1.5)).toBe(1500);
    expect(retryAfterMs('99999', undefined)).toBe(120_000);
    expect(retryAfterMs('soon', undefined)).toBeUndefined();
  });
});
