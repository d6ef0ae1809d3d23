import net from 'node:net';

export interface TcpProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Everything the server sent so far, as text (server WebSocket frames are not masked, so graphql-ws messages show). */
  received(): string;
  /** Cuts every open connection (both sides), as a network drop would. */
  dropAll(): void;
  /** While down, every new connection is reset at once, as for a server that is restarting. */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

/** A byte-level TCP proxy (HTTP and WebSocket alike) whose connections a test can cut. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let accepted = 0;
  let received = '';
  let down = false;
  const server = net.createServer((client) => {
    if (down) {
      client.resetAndDestroy();
      return;
    }
    accepted++;
    const upstream = net.connect(targetPort, '127.0.0.1');
    open.add(client);
    open.add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', cut).on('close', cut);
    upstream.on('error', cut).on('close', cut);
    upstream.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    received: () => received,
    dropAll: () => {
      for (const socket of [...open]) socket.destroy();
      open.clear();
    },
    setDown: (value) => {
      down = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
