import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type SubscriptionError, websocketSubscriber } from '../../src/cli/subscriptionTransport.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function listen(server: net.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/graphql`;
}

function firstError(url: string, token?: string): Promise<SubscriptionError> {
  return new Promise((resolve, reject) => {
    const close = websocketSubscriber(url, token, { connectTimeoutMs: 300 })(
      { id: 'ro_1', after: '0' },
      {
        connected: () => reject(new Error('unexpectedly connected')),
        next: () => reject(new Error('unexpected update')),
        complete: () => reject(new Error('unexpected completion')),
        error: (error) => {
          close();
          resolve(error);
        },
      },
    );
  });
}

describe('websocketSubscriber', () => {
  it('gives up on a server that never answers the upgrade (transport error, so the follower can poll)', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => void sockets.add(socket));
    closers.push(async () => {
      for (const s of sockets) s.destroy();
    });
    const error = await firstError(await listen(silent));
    expect(error.kind).toBe('transport');
  });

  it('reports a refused upgrade (HTTP 401) as an authentication error', async () => {
    const server = http.createServer();
    server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'));
    const error = await firstError(await listen(server), 'bad');
    expect(error).toMatchObject({ kind: 'auth', code: 'UNAUTHENTICATED' });
  });
});
