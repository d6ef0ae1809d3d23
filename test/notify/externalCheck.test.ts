import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/domain/notifications/signature.js';
import { sendCheck } from '../../src/notify/externalCheck.js';
import { TargetGuard } from '../../src/notify/targetGuard.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A check endpoint on 127.0.0.1 that records what it got and answers with `respond`. */
async function endpoint(
  respond: (req: IncomingMessage, body: string, res: ServerResponse) => void,
): Promise<{ url: string; got: { headers: IncomingMessage['headers']; body: string }[] }> {
  const got: { headers: IncomingMessage['headers']; body: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      got.push({ headers: req.headers, body });
      respond(req, body, res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/check/secret-path`, got };
}

const local = new TargetGuard(['127.0.0.0/8']);
const options = (timeoutMs = 10_000) => ({ timeoutMs, signal: new AbortController().signal, userAgent: 'rollplane/test', now: () => 1_765_000_000_000 });

describe('sending an external check', () => {
  it('POSTs the run’s context signed with the gate’s secret, and reads a 2xx as proceed', async () => {
    const check = await endpoint((_req, _body, res) => res.writeHead(204).end());
    const answer = await sendCheck(local, { url: check.url, secret: 's3cret' }, { run: 'r-1', wave: 'canary', version: 'v2' }, options());
    expect(answer).toEqual({ kind: 'PROCEED' });
    const [request] = check.got;
    expect(JSON.parse(request!.body)).toEqual({ run: 'r-1', wave: 'canary', version: 'v2' });
    expect(verifySignature('s3cret', request!.headers['x-rollplane-signature'] as string, request!.body, 1_765_000_000)).toBe(true);
    expect(verifySignature('other', request!.headers['x-rollplane-signature'] as string, request!.body, 1_765_000_000)).toBe(false);
  });

  it('waits when asked, by body or by Retry-After', async () => {
    const byBody = await endpoint((_req, _body, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"retryAfterSeconds": 45}'));
    expect(await sendCheck(local, { url: byBody.url, secret: 's' }, {}, options())).toEqual({ kind: 'WAIT', afterMs: 45_000 });
    const byHeader = await endpoint((_req, _body, res) => res.writeHead(503, { 'retry-after': '7' }).end());
    expect(await sendCheck(local, { url: byHeader.url, secret: 's' }, {}, options())).toEqual({ kind: 'WAIT', afterMs: 7_000 });
  });

  it('reads a redirect, an error status, a hang and a refused address as failures whose reason never shows the URL', async () => {
    const redirect = await endpoint((_req, _body, res) => res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end());
    expect(await sendCheck(local, { url: redirect.url, secret: 's' }, {}, options())).toEqual({ kind: 'FAILURE', reason: 'HTTP 302' });
    const broken = await endpoint((_req, _body, res) => res.writeHead(500).end('no'));
    expect(await sendCheck(local, { url: broken.url, secret: 's' }, {}, options())).toEqual({ kind: 'FAILURE', reason: 'HTTP 500: no' });
    const hanging = await endpoint(() => {});
    const hung = await sendCheck(local, { url: hanging.url, secret: 's' }, {}, options(200));
    expect(hung).toEqual({ kind: 'FAILURE', reason: 'timed out after 200 ms' });
    const refused = await sendCheck(new TargetGuard(), { url: broken.url, secret: 's' }, {}, options());
    expect(refused.kind).toBe('FAILURE');
    expect(JSON.stringify(refused)).not.toContain('secret-path');
    expect(broken.got).toHaveLength(1);
  });
});
