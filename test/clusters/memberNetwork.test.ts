import { KIND_SERVED_RESOURCES } from '../../src/kinds/index.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { CoreV1Api, Watch } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseMemberKubeconfig } from '../../src/clusters/credentials.js';
import { MemberConnection, UNREADABLE } from '../../src/clusters/MemberConnection.js';
import { MemberNetwork } from '../../src/clusters/memberNetwork.js';
import { kubeconfigFor } from '../../src/sim/kubeconfig.js';
import { JsonWatch } from '../../src/kube/jsonWatch.js';

/**
 * What a member connection may reach and read (attack 13, F2/F4 and F7; docs/adr/0056-clusters-api.md): discovery and
 * /version bodies past the cap end the request (an endless body was read until the timeout: RSS 122 → 613 MB), and a
 * server in a denied network is never sent a request — an IP literal, or a name that resolves into it on connect.
 * Attack 14 (docs/adr/0057-member-answers-a-kube-apiserver-never-gives.md): compressed answers, redirects and the
 * unspecified addresses got past both.
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
  kindResources: KIND_SERVED_RESOURCES,
};
const VERSION = JSON.stringify({ major: '1', minor: '31', gitVersion: 'v1.31.0' });

const servers: Server[] = [];
const requests: string[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  requests.length = 0;
});

/** A member API server answering with `handler` (on `host`, 127.0.0.1 by default); its port. */
async function member(handler: (req: IncomingMessage, res: ServerResponse) => void, host = '127.0.0.1', seen = requests): Promise<number> {
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
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

/** The member's bearer token: no health message may carry it. */
const TOKEN = 'planted-member-token-7f3a91';

function connect(server: string, network: MemberNetwork): MemberConnection {
  const kubeConfig = parseMemberKubeconfig(stringify(kubeconfigFor(server, TOKEN)), 'test', { allowExecPlugins: false });
  return new MemberConnection('m', kubeConfig, { ...OPTIONS, network }, () => {});
}

async function probe(server: string, network: MemberNetwork) {
  const connection = connect(server, network);
  try {
    const health = await connection.probeNow();
    expect(JSON.stringify(health)).not.toContain(TOKEN);
    return health;
  } finally {
    await connection.stop();
  }
}

/** A /version answer, then `discovery` for every discovery read. */
function versionThen(discovery: (req: IncomingMessage, res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse) =>
    req.url === '/version' ? res.writeHead(200, { 'content-type': 'application/json' }).end(VERSION) : discovery(req, res);
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

  // Attack 14, F12: an endless discovery list ended at the cap, but the member said "no answer".
  it('ends an endless discovery body past the cap with the same reason as /version', async () => {
    const port = await member(
      versionThen((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"kind":"APIGroupList","groups":[');
        let n = 0;
        const more = () => {
          while (!res.destroyed && res.write(`{"name":"g${n}.example.com","versions":[{"groupVersion":"g${n}.example.com/v1","version":"v1"}]},`)) n++;
          if (!res.destroyed) res.once('drain', more);
        };
        req.on('close', () => res.destroy());
        more();
      }),
    );
    expect(await probe(`http://127.0.0.1:${port}`, capped(8 * 1_048_576))).toMatchObject({ state: 'UNREACHABLE', message: 'ERESPONSE_TOO_LARGE' });
  });
});

// Attack 14, F12 as it happened: the member's /version had no Content-Type, so client-node could not read it, and the
// health said "no answer" (its endless discovery list was never asked for). An answer that cannot be read says so.
describe('an answer that is not the Kubernetes API', () => {
  it.each([
    ['a /version without a content type', (res: ServerResponse) => res.writeHead(200).end(VERSION)],
    ['a /version that is not JSON', (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"major":')],
  ])('%s is an unreadable answer, not "no answer"', async (_name, answer) => {
    const port = await member((_req, res) => answer(res));
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'UNREACHABLE', message: UNREADABLE });
  });
});

/**
 * Attack 14, F2: the cap counted the bytes on the wire, and client-node's fetch inflated a gzip answer it had asked for
 * (1 MB that inflates to 1 GiB took the service from 173 MB to 2.2 GB RSS, on every retry). A member is asked for no
 * encoding, and an encoded answer is refused unread, on every request (a list is not capped: inflating it would be
 * unbounded).
 */
describe('compressed answers', () => {
  const bomb = gzipSync(Buffer.alloc(16 * 1_048_576, 0x20)); // 16 KB on the wire, 16 MiB inflated
  const gzipped = (req: IncomingMessage, res: ServerResponse) => {
    encodings.push(req.headers['accept-encoding']);
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': bomb.length }).end(bomb);
  };
  const encodings: (string | undefined)[] = [];
  afterEach(() => {
    encodings.length = 0;
  });

  it('asks for no encoding and refuses a gzip /version answer unread (a gzip bomb)', async () => {
    const port = await member(gzipped);
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'UNREACHABLE', message: 'ECONTENT_ENCODING' });
    expect(encodings).toEqual(['identity']);
  });

  it('refuses a gzip discovery answer, even a small one', async () => {
    const small = gzipSync(JSON.stringify({ kind: 'APIResourceList', groupVersion: 'apps/v1', resources: [] }));
    const port = await member(
      versionThen((_req, res) =>
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': small.length }).end(small),
      ),
    );
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'UNREACHABLE', message: 'ECONTENT_ENCODING' });
  });

  it('refuses a gzip answer to a list (not capped) and to a watch', async () => {
    const port = await member(gzipped);
    const connection = connect(`http://127.0.0.1:${port}`, capped());
    try {
      const list = connection.kubeConfig.makeApiClient(CoreV1Api).listNamespace();
      await expect(list).rejects.toMatchObject({ code: 'ECONTENT_ENCODING' });
      const watched = await watchError(connection, '/api/v1/namespaces');
      expect(watched).toMatchObject({ code: 'ECONTENT_ENCODING' });
      expect(encodings).toEqual(['identity', 'identity']);
    } finally {
      await connection.stop();
    }
  });
});

/** The error a watch of `path` ends with (client-node's Watch: another door than the typed APIs'). */
function watchError(connection: MemberConnection, path: string): Promise<unknown> {
  return new Promise((resolve) => {
    void new Watch(connection.kubeConfig).watch(path, {}, () => {}, resolve);
  });
}

/**
 * Attack 14, F3: a member's 302 to a denied address was followed (8 GETs in 4 s). A kube-apiserver does not redirect
 * API calls: a redirect is not followed, on any door, and the member is UNREACHABLE saying so.
 */
describe('redirects', () => {
  it('follows no redirect from a member, to a denied address or anywhere else', async () => {
    const reached: string[] = [];
    const elsewhere = await member(
      versionThen((_req, res) => res.writeHead(404).end()),
      '127.0.0.2',
      reached,
    );
    const port = await member((_req, res) => res.writeHead(302, { location: `http://127.0.0.2:${elsewhere}/version` }).end());
    const denying = new MemberNetwork({ denyNetworks: ['127.0.0.2/32'], maxDiscoveryBytes: 65_536 });
    expect(await probe(`http://127.0.0.1:${port}`, denying)).toMatchObject({ state: 'UNREACHABLE', message: 'EREDIRECT' });
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'UNREACHABLE', message: 'EREDIRECT' });
    const connection = connect(`http://127.0.0.1:${port}`, capped());
    try {
      await expect(connection.kubeConfig.makeApiClient(CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 'EREDIRECT' });
      expect(await watchError(connection, '/api/v1/namespaces')).toMatchObject({ code: 'EREDIRECT' });
    } finally {
      await connection.stop();
    }
    expect(reached).toEqual([]);
  });

  it('follows no redirect to another path of the same server either', async () => {
    const port = await member((req, res) =>
      req.url === '/version' ? res.writeHead(307, { location: '/version?again' }).end() : res.writeHead(200).end(VERSION),
    );
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'UNREACHABLE', message: 'EREDIRECT' });
    expect(requests).toEqual(['/version']);
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

  // Attack 14, F4: 0.0.0.0, 0 and [::ffff:0.0.0.0] reached a listener on 127.0.0.1 (with the bearer token) while the
  // deny list named 127.0.0.0/8 and ::1/128: connecting to the unspecified address reaches the host itself.
  it.each(['http://0.0.0.0', 'http://0', 'http://[::ffff:0.0.0.0]', 'http://[::]', 'http://0.1.2.3'])(
    'takes %s for the host itself: denied with loopback',
    async (server) => {
      const port = await answering();
      const network = new MemberNetwork({ denyNetworks: ['127.0.0.0/8', '::1/128'], maxDiscoveryBytes: 65_536 });
      await expect(network.checkServer(`${server}:${port}`, 'input.kubeconfig')).rejects.toMatchObject({ reason: 'DENIED_ADDRESS' });
      expect(await probe(`${server}:${port}`, network)).toMatchObject({ state: 'UNREACHABLE', message: 'EADDRDENIED' });
      expect(requests).toEqual([]);
    },
  );

  it('takes a name that resolves to the unspecified address for the host itself', async () => {
    const port = await answering();
    const network = new MemberNetwork({ denyNetworks: ['::1/128'], maxDiscoveryBytes: 65_536 }, async () => [{ address: '0.0.0.0', family: 4 }]);
    await expect(network.checkServer(`https://member.test:${port}`, 'input.kubeconfig')).rejects.toMatchObject({ reason: 'DENIED_ADDRESS' });
    expect(await probe(`http://member.test:${port}`, network)).toMatchObject({ state: 'UNREACHABLE', message: 'EADDRDENIED' });
    expect(requests).toEqual([]);
    // A deny list that does not name the host leaves it (and so the unspecified address) allowed, as 127.0.0.1 is.
    expect(new MemberNetwork({ denyNetworks: ['169.254.0.0/16'], maxDiscoveryBytes: 1 }).isDenied('0.0.0.0')).toBe(false);
  });

  it('lets through what it does not deny, and denies nothing by default', async () => {
    const port = await answering();
    const network = new MemberNetwork({ denyNetworks: ['169.254.0.0/16'], maxDiscoveryBytes: 65_536 }, async () => [{ address: '127.0.0.1', family: 4 }]);
    expect(await probe(`http://member.test:${port}`, network)).toMatchObject({ state: 'READY' });
    expect(await probe(`http://127.0.0.1:${port}`, capped())).toMatchObject({ state: 'READY' });
    expect(requests.filter((url) => url === '/version')).toHaveLength(2);
  });
});

/**
 * ADR 0060: lists and watches of the member's runtime are capped too — a list's whole body, a watch per line (one
 * event) — so a hostile or broken member cannot exhaust rollplane's memory with a list that never ends or a watch line
 * that never does; the request fails, and the member's health says why until its next probe.
 */
describe('the caps on list answers and watch events', () => {
  const listCapped = () => new MemberNetwork({ denyNetworks: [], maxDiscoveryBytes: 65_536, maxListBytes: 1_048_576, maxWatchEventBytes: 65_536 });
  /** /version answers, discovery finds nothing (READY, no kinds), and `/api/v1/namespaces` is `api`'s. */
  const hostile = (api: (req: IncomingMessage, res: ServerResponse) => void) =>
    versionThen((req, res) => {
      if (req.url?.startsWith('/api/v1/namespaces')) return api(req, res);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
    });
  const ready = async (connection: MemberConnection) => {
    connection.start();
    const deadline = Date.now() + 30_000;
    while (connection.health().state !== 'READY') {
      if (Date.now() > deadline) throw new Error(`not READY: ${JSON.stringify(connection.health())}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const watchLines = (lines: number, bytes: number) => (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.includes('watch=true')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"NamespaceList","items":[]}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    for (let i = 0; i < lines; i++) {
      const object = {
        kind: 'Namespace',
        apiVersion: 'v1',
        metadata: { name: `ns-${i}`, resourceVersion: String(i + 1), annotations: { pad: 'x'.repeat(bytes) } },
      };
      res.write(`${JSON.stringify({ type: 'ADDED', object })}\n`);
    }
  };

  /** An empty list, then a watch whose first line never ends. */
  const endlessWatchLine = (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.includes('watch=true')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"NamespaceList","items":[]}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"type":"ADDED","object":{"kind":"Namespace","metadata":{"name":"');
    const chunk = 'x'.repeat(65_536);
    const more = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', more);
    };
    more();
  };

  it('ends an endless list answer past the cap; the member is UNREACHABLE naming the setting', async () => {
    const port = await member(hostile((_req, res) => endless(res)));
    const connection = connect(`http://127.0.0.1:${port}`, listCapped());
    try {
      await ready(connection);
      await expect(connection.kubeConfig.makeApiClient(CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 'ERESPONSE_TOO_LARGE' });
      expect(connection.health()).toMatchObject({
        state: 'UNREACHABLE',
        message: 'ERESPONSE_TOO_LARGE: a list answer is larger than 1048576 bytes (ROLLPLANE_MEMBER_CLUSTER_MAX_LIST_BYTES)',
      });
      expect(JSON.stringify(connection.health())).not.toContain(TOKEN);
    } finally {
      await connection.stop();
    }
  });

  it('refuses a list announced larger than the cap unread, and reads one under it', async () => {
    const list = (bytes: number) => JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [], padding: 'x'.repeat(bytes) });
    let size = 2_000_000;
    const port = await member(
      hostile((_req, res) => {
        const body = list(size);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      }),
    );
    const connection = connect(`http://127.0.0.1:${port}`, listCapped());
    try {
      await ready(connection);
      await expect(connection.kubeConfig.makeApiClient(CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 'ERESPONSE_TOO_LARGE' });
      size = 500_000;
      await expect(connection.kubeConfig.makeApiClient(CoreV1Api).listNamespace()).resolves.toMatchObject({ kind: 'NamespaceList' });
    } finally {
      await connection.stop();
    }
  });

  it('ends a watch whose line never ends; the member is UNREACHABLE naming the setting', async () => {
    const port = await member(hostile(endlessWatchLine));
    const connection = connect(`http://127.0.0.1:${port}`, listCapped());
    try {
      await ready(connection);
      expect(await watchError(connection, '/api/v1/namespaces')).toMatchObject({ code: 'ERESPONSE_TOO_LARGE' });
      expect(connection.health()).toMatchObject({
        state: 'UNREACHABLE',
        message: 'ERESPONSE_TOO_LARGE: a watch event is larger than 65536 bytes (ROLLPLANE_MEMBER_CLUSTER_MAX_WATCH_EVENT_BYTES)',
      });
    } finally {
      await connection.stop();
    }
  });

  it("caps the runtime's own watch too (JsonWatch, what member informers use): the member is UNREACHABLE naming the setting", async () => {
    const port = await member(hostile(endlessWatchLine));
    const connection = connect(`http://127.0.0.1:${port}`, listCapped());
    try {
      await ready(connection);
      const ended = await new Promise<unknown>((resolve) => {
        void new JsonWatch(connection.kubeConfig).watch('/api/v1/namespaces', {}, () => {}, resolve);
      });
      expect(ended).toBeTruthy();
      expect(connection.health()).toMatchObject({
        state: 'UNREACHABLE',
        message: 'ERESPONSE_TOO_LARGE: a watch event is larger than 65536 bytes (ROLLPLANE_MEMBER_CLUSTER_MAX_WATCH_EVENT_BYTES)',
      });
    } finally {
      await connection.stop();
    }
  });

  it('counts a watch per event: many events under the cap pass, however much they add up to', async () => {
    // 64 events of about 20 KB: 1.3 MB in all, more than both caps, each line under the watch event's.
    const port = await member(hostile(watchLines(64, 20_000)));
    const connection = connect(`http://127.0.0.1:${port}`, listCapped());
    try {
      await ready(connection);
      const names: string[] = [];
      await new Promise<void>((resolve, reject) => {
        void new Watch(connection.kubeConfig).watch(
          '/api/v1/namespaces',
          {},
          (_type, object: { metadata: { name: string } }) => {
            names.push(object.metadata.name);
            if (names.length === 64) resolve();
          },
          (error) => (error ? reject(error) : undefined),
        );
      });
      expect(names).toHaveLength(64);
      expect(connection.health().state).toBe('READY');
    } finally {
      await connection.stop();
    }
  });
});
