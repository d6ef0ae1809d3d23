import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_SERVER_KEEP_ALIVE_MS } from '../../src/sim/api/ApiServer.js';
import { ClusterFrontDoor, UPSTREAM_IDLE_MS } from '../../src/sim/clusterFrontDoor.js';
import { until } from '../helpers/until.js';

/**
 * A simulated cluster's front door closes its idle connections to the API server before the server would (issue 29: a
 * request handed a kept-alive connection the API server was closing at its own idle timeout was reset; the
 * 1,000-cluster bench refused a bump on one). Here with a backend that keeps idle connections 3 s and a front door that
 * keeps its own 100 ms: the front door must be the one that closes.
 */
describe("the simulated cluster's front door toward its API server", () => {
  let backend: Server;
  let door: ClusterFrontDoor;
  let url: string;
  /** Who ended each backend connection first: the front door (its FIN arrived) or the backend's own idle timeout. */
  const closedBy: ('door' | 'server')[] = [];

  beforeAll(async () => {
    backend = createServer({ keepAliveTimeout: 3_000 }, (_req, res) => res.end('{}'));
    backend.on('connection', (socket) => {
      let decided = false;
      socket.on('end', () => {
        if (!decided) closedBy.push('door');
        decided = true;
      });
      socket.on('timeout', () => {
        if (!decided) closedBy.push('server');
        decided = true;
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    door = new ClusterFrontDoor(`http://127.0.0.1:${(backend.address() as AddressInfo).port}`, '127.0.0.1', { upstreamIdleMs: 100 });
    url = await door.start();
  });
  afterAll(async () => {
    await door?.stop();
    await new Promise<void>((resolve) => backend.close(() => resolve()));
  });

  it('keeps its idle upstream connections for less time than the API server keeps them', () => {
    expect(UPSTREAM_IDLE_MS).toBeLessThan(API_SERVER_KEEP_ALIVE_MS);
  });

  it('closes an idle upstream connection itself, before the API server times it out', async () => {
    // A kept-alive client, as rollplane is: the front door passes the request's `Connection` header on.
    const client = new Agent({ keepAlive: true });
    const status = await new Promise<number>((resolve, reject) => {
      request(`${url}/version`, { agent: client }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(200);
    await until('the upstream connection closed', () => closedBy.length > 0, { timeoutMs: 10_000 });
    expect(closedBy).toEqual(['door']);
    client.destroy();
  });
});
