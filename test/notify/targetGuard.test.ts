import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postOnce, sinkAgents } from '../../src/notify/httpSend.js';
import { TargetGuard, TargetRefusedError } from '../../src/notify/targetGuard.js';

/** A resolver answering from a table, as DNS would (the names are made up; nothing leaves the machine). */
function resolverOf(table: Record<string, string[]>) {
  return async (hostname: string) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const PUBLIC = '93.184.215.14';

describe('TargetGuard', () => {
  const guard = new TargetGuard([], resolverOf({ 'hooks.example.com': [PUBLIC], localhost: ['127.0.0.1', '::1'] }));

  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'the cloud metadata endpoint'],
    ['http://localhost:4000/graphql', "rollplane's own API by name"],
    ['http://127.0.0.1:4000/graphql', 'loopback'],
    ['http://[::1]:4000/', 'IPv6 loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback inside an IPv4-mapped IPv6 address'],
    ['http://[::ffff:a9fe:a9fe]/', 'the metadata endpoint, IPv4-mapped in hex'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'the metadata endpoint through NAT64'],
    ['http://0x7f000001/', 'loopback written in hex'],
    ['http://2130706433/', 'loopback written as one number'],
    ['http://0/', '0.0.0.0'],
    ['http://10.0.0.5/', 'a private network'],
    ['http://172.20.1.1/', 'a private network'],
    ['http://192.168.1.1/', 'a private network'],
    ['http://100.64.0.1/', 'carrier-grade NAT'],
    ['http://[fd00::1]/', 'IPv6 unique local'],
    ['http://[fe80::1]/', 'IPv6 link-local'],
    ['http://224.0.0.1/', 'multicast'],
  ])('refuses %s (%s)', async (url) => {
    await expect(guard.check(url)).rejects.toThrow(TargetRefusedError);
    await expect(guard.check(url)).rejects.toThrow(/not a public address/);
  });

  it.each([
    ['ftp://hooks.example.com/', /http or https/],
    ['file:///etc/passwd', /http or https/],
    ['http://user:pass@hooks.example.com/', /credentials/],
    ['not a url', /absolute http/],
    ['https://nowhere.example.com/', /cannot resolve nowhere.example.com: ENOTFOUND/],
  ])('refuses %s for its form', async (url, reason) => {
    await expect(guard.check(url)).rejects.toThrow(reason);
  });

  it('refuses localhost through the system resolver', async () => {
    await expect(new TargetGuard().check('http://localhost:4000/graphql')).rejects.toThrow(/localhost resolves to .*, which is not a public address/);
  });

  it('refuses a DNS name that resolves to loopback or link-local, and one with any private address among public ones', async () => {
    const dns = new TargetGuard(
      [],
      resolverOf({ 'rebind.example.com': ['127.0.0.1'], 'meta.example.com': ['169.254.169.254'], 'mixed.example.com': [PUBLIC, '10.1.2.3'] }),
    );
    await expect(dns.check('http://rebind.example.com/hook')).rejects.toThrow('rebind.example.com resolves to 127.0.0.1, which is not a public address');
    await expect(dns.check('http://meta.example.com/')).rejects.toThrow('169.254.169.254');
    await expect(dns.check('https://mixed.example.com/')).rejects.toThrow('10.1.2.3');
  });

  it('accepts public addresses, and private ones only in the networks an operator allows', async () => {
    expect((await guard.check('https://hooks.example.com/rollplane?x=1')).hostname).toBe('hooks.example.com');
    expect((await guard.check(`http://${PUBLIC}:8080/`)).port).toBe('8080');
    const allowing = new TargetGuard(['127.0.0.0/8', '10.20.0.0/16'], resolverOf({ localhost: ['127.0.0.1', '::1'], 'internal.example.com': ['10.20.3.4'] }));
    await expect(allowing.check('http://127.0.0.1:9999/')).resolves.toBeInstanceOf(URL);
    await expect(allowing.check('http://internal.example.com/')).resolves.toBeInstanceOf(URL);
    // ::1 is not in the allowed networks: a name that resolves to it too is refused.
    await expect(allowing.check('http://localhost/')).rejects.toThrow('::1');
    await expect(allowing.check('http://10.21.0.1/')).rejects.toThrow(TargetRefusedError);
    await expect(allowing.check('http://169.254.169.254/')).rejects.toThrow(TargetRefusedError);
    expect(() => new TargetGuard(['10.0.0.0'])).toThrow(/not a network/);
  });
});

describe('a delivery connection', () => {
  let server: Server;
  let port = 0;
  let received = 0;
  let connections = 0;
  let connectionsAtStart = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      received++;
      req.resume();
      res.end('ok');
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const options = () => ({ timeoutMs: 5_000, signal: new AbortController().signal });

  it('is refused when the name resolves to a refused address at connect time (DNS rebinding), and nothing is sent', async () => {
    let lookups = 0;
    // Public when the subscription is checked, loopback when the delivery connects.
    const rebinding = new TargetGuard([], async () => [{ address: lookups++ === 0 ? PUBLIC : '127.0.0.1', family: 4 }]);
    const url = await rebinding.check(`http://rebind.example.com:${port}/hook`);
    await expect(postOnce(rebinding, url, {}, '{}', options())).rejects.toThrow('resolves to 127.0.0.1, which is not a public address');
    expect(lookups).toBe(2);
    expect(received).toBe(0);
  });

  it('reaches an allowed address through the same lookup', async () => {
    const allowing = new TargetGuard(['127.0.0.0/8'], async () => [{ address: '127.0.0.1', family: 4 }]);
    const answer = await postOnce(allowing, new URL(`http://receiver.example.com:${port}/hook`), {}, '{}', options());
    expect(answer.statusCode).toBe(200);
    expect(answer.body).toBe('ok');
    expect(received).toBe(1);
  });

  it('reuses a connection to the same sink, and checks its address again on reuse', async () => {
    connectionsAtStart = connections;
    const agents = sinkAgents();
    try {
      const allowing = new TargetGuard(['127.0.0.0/8'], async () => [{ address: '127.0.0.1', family: 4 }]);
      const url = new URL(`http://receiver.example.com:${port}/hook`);
      const before = received;
      await postOnce(allowing, url, {}, '{}', { ...options(), agents });
      await postOnce(allowing, url, {}, '{}', { ...options(), agents });
      expect(received - before).toBe(2);
      expect(connections).toBe(connectionsAtStart + 1);
      // The operator withdrew the allowance: the open connection is not used.
      await expect(postOnce(new TargetGuard([], allowing.lookup as never), url, {}, '{}', { ...options(), agents })).rejects.toThrow(
        'connected to 127.0.0.1, which is not allowed',
      );
      expect(received - before).toBe(2);
    } finally {
      agents.destroy();
    }
  });

  it('checks the connected address too: a literal that reaches a refused address is cut before anything is sent', async () => {
    const guardNoLoopback = new TargetGuard([]);
    const before = received;
    await expect(postOnce(guardNoLoopback, new URL(`http://127.0.0.1:${port}/hook`), {}, '{}', options())).rejects.toThrow(
      'connected to 127.0.0.1, which is not allowed',
    );
    expect(received).toBe(before);
  });
});
