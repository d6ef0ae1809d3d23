import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseMemberKubeconfig } from '../../src/clusters/credentials.js';
import { MemberConnection } from '../../src/clusters/MemberConnection.js';
import { MemberNetwork } from '../../src/clusters/memberNetwork.js';
import { kubeconfigFor } from '../../src/sim/kubeconfig.js';

/**
 * What a member connection may reach and read (attack 13, F2/F4 and F7; docs/adr/0056-clusters-api.md): discovery and
 * /version bodies past the cap end the request (an endless body was read until the timeout: RSS 122 → 613 MB), and a
 * server in a denied network is never sent a request — an IP literal, or a name that resolves into it on connect.
 */

const OPTIONS = {
  qps: 100,
  burst: 100,
  // Long: a body that is not capped would be read until this fires, and the test would time out first.
  requestTimeoutMs: 120_000,
  probeIntervalMs: 60_000,
  backoffBaseMs: 60_000,
  backoffMaxMs: 60_000,
  versions: { min: { major: 1, minor: 24 }, max: { major: 1, minor: 34 } },
};
const VERSION = JSON.stringify({ major: '1', minor: '31', gitVersion: 'v1.31.0' });

let server: Server | undefined;
const requests: string[] = [];
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
  requests.length = 0;
});

/** A member API server answering with `handler`; its port. */
async function member(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<number> {
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Writes chunks of 64 KB until the client goes away: an endless body. */
function endless(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(65_536, 0x20);
  const more = () => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', more);
  };
  more();
}

function probe(server: string, network: MemberNetwork) {
  const kubeConfig = parseMemberKubeconfig(stringify(kubeconfigFor(server)), 'test', { allowExecPlugins: false });
  const connection = new MemberConnection('m', kubeConfig, { ...OPTIONS, network }, () => {});
  return connection.probeNow().finally(() => connection.stop());
}

const capped = (maxDiscoveryBytes = 65_536) => new MemberNetwork({ denyNetworks: [], maxDiscoveryBytes });

describe('the cap on /version and discovery bodies', () => {
  it('ends an endless /version body past the cap', async () => {
    const port = await member((_req, res) => endless(res));
    const health = await probe(`http://127.0.0.1:${port}`, capped());
    expect(health).toMatchObject({ state: 'UNREACHABLE', message: 'ERESPONSE_TOO_LARGE' });
  });

  it('refuses a discovery body announced larger than the cap without reading it, and reads one under it', async () => {
    const big = JSON.stringify({ kind: 'APIResourceList', groupVersion: 'apps/v1', resources: [], padding: 'x'.repeat(200_000) });
    const port = await member((req, res) => {
      const body = req.url === '/version' ? VERSION : big;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'UNREACHABLE', message: 'ERESPONSE_TOO_LARGE' });
    expect(await probe(`http://127.0.0.1:${port}`, capped(1_048_576))).toMatchObject({ state: 'READY' });
  });
});

describe('the deny list (ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS)', () => {
  const answering = () =>
    member((req, res) => (req.url === '/version' ? res.writeHead(200, { 'content-type': 'application/json' }).end(VERSION) : res.writeHead(404).end()));

  it('sends nothing to a server whose IP literal is denied', async () => {
    const port = await answering();
    const network = new MemberNetwork({ denyNetworks: ['127.0.0.0/8'], maxDiscoveryBytes: 65_536 });
    expect(await probe(`http://127.0.0.1:${port}`, network)).toMatchObject({ state: 'UNREACHABLE', message: 'EADDRDENIED' });
    expect(requests).toEqual([]);
    await expect(network.checkServer(`https://127.0.0.1:${port}`, 'input.kubeconfig')).rejects.toThrow(/ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS/);
  });

  it('sends nothing to a name that resolves into a denied network on connect (after it passed at registration)', async () => {
    const port = await answering();
    let address = '192.0.2.10';
    const network = new MemberNetwork({ denyNetworks: ['127.0.0.0/8', '169.254.0.0/16'], maxDiscoveryBytes: 65_536 }, async () => [{ address, family: 4 }]);
    await network.checkServer(`https://member.test:${port}`, 'input.kubeconfig');
    address = '127.0.0.1'; // DNS rebinding: the name now points at rollplane's own host
    expect(await probe(`http://member.test:${port}`, network)).toMatchObject({ state: 'UNREACHABLE', message: 'EADDRDENIED' });
    expect(requests).toEqual([]);
    await expect(network.checkServer(`https://member.test:${port}`, 'input.kubeconfig')).rejects.toThrow(/denies; refused$/);
  });

  it('lets through what it does not deny, and denies nothing by default', async () => {
    const port = await answering();
    const network = new MemberNetwork({ denyNetworks: ['169.254.0.0/16'], maxDiscoveryBytes: 65_536 }, async () => [{ address: '127.0.0.1', family: 4 }]);
    expect(await probe(`http://member.test:${port}`, network)).toMatchObject({ state: 'READY' });
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'READY' });
    expect(requests.filter((url) => url === '/version')).toHaveLength(2);
  });
});
