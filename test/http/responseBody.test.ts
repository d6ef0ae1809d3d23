import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** node:http, not fetch: fetch decompresses and hides the encoding this test is about. */
function raw(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const json = { 'content-type': 'application/json' };

describe('HTTP response niceties (issue 17)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
    for (let i = 0; i < 30; i++) {
      await app.domain.rollouts.create({
        kind: 'VIRTUAL_CLUSTER',
        fromVersion: '1',
        toVersion: `${i}`,
        selector: {},
        strategy: defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER),
        cause: { message: `release ${i}` },
        targets: [],
      });
    }
  });
  afterAll(async () => {
    await app?.close();
  });

  const page = JSON.stringify({ query: '{ rollouts(first: 30) { edges { node { id toVersion cause { message } createdAt } } } }' });

  it('gzips a large response for a client that accepts it, and the content is the same', async () => {
    const plain = await raw(app.url, { method: 'POST', headers: json, body: page });
    const zipped = await raw(app.url, { method: 'POST', headers: { ...json, 'accept-encoding': 'gzip, br' }, body: page });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.body.length).toBeLessThan(plain.body.length / 2);
    expect(gunzipSync(zipped.body).toString()).toBe(plain.body.toString());
    expect(zipped.headers.vary).toContain('accept-encoding');
  });

  it('leaves small responses and clients that refuse gzip alone', async () => {
    const small = await raw(app.url, { method: 'POST', headers: { ...json, 'accept-encoding': 'gzip' }, body: '{"query":"{ __typename }"}' });
    expect(small.headers['content-encoding']).toBeUndefined();
    const refused = await raw(app.url, { method: 'POST', headers: { ...json, 'accept-encoding': 'gzip;q=0, identity' }, body: page });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });

  it('answers a repeated GET with 304 while the result is unchanged, and 200 with a new ETag once it changes', async () => {
    const url = `${app.url}?query=${encodeURIComponent('{ rollouts(first: 5) { totalCount edges { node { id } } } }')}`;
    const headers = { 'apollo-require-preflight': '1' };
    const first = await raw(url, { headers });
    expect(first.status).toBe(200);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\/"/);
    const again = await raw(url, { headers: { ...headers, 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    await app.domain.rollouts.create({
      kind: 'VIRTUAL_CLUSTER',
      fromVersion: '1',
      toVersion: 'new',
      selector: {},
      strategy: defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER),
      cause: {},
      targets: [],
    });
    const changed = await raw(url, { headers: { ...headers, 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
  });

  it('never gives POSTs (mutations) an ETag', async () => {
    const res = await raw(app.url, { method: 'POST', headers: json, body: '{"query":"{ __typename }"}' });
    expect(res.headers.etag).toBeUndefined();
  });

  it('takes automatic persisted queries: a hash alone after the document was sent once, over GET with an ETag too', async () => {
    const query = '{ serverInfo { version } }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const extensions = encodeURIComponent(JSON.stringify({ persistedQuery: { version: 1, sha256Hash } }));
    const headers = { 'apollo-require-preflight': '1' };
    const unknown = await raw(`${app.url}?extensions=${extensions}`, { headers });
    expect(JSON.parse(unknown.body.toString()).errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = await raw(app.url, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ query, extensions: { persistedQuery: { version: 1, sha256Hash } } }),
    });
    expect(JSON.parse(registered.body.toString()).data.serverInfo.version).toBeTruthy();
    const byHash = await raw(`${app.url}?extensions=${extensions}`, { headers });
    expect(byHash.status).toBe(200);
    expect(JSON.parse(byHash.body.toString()).data.serverInfo.version).toBeTruthy();
    expect(byHash.headers.etag).toBeDefined();
  });
});
