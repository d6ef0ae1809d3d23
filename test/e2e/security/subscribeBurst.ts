/**
 * The attacker of issue 34, attack 11, findings F5 and F7, as a process of its own: one viewer token, SOCKETS
 * WebSockets; every PERIOD_MS each socket sends 99 `subscribe` messages at once (one write, so that they reach the
 * server in one read) and completes them half a period later. Runs until SIGTERM, then prints one JSON line: the
 * subscribes sent, the operations refused by code, and the sockets closed by code and reason.
 *
 * argv: <graphql url> <viewer token>
 */
import WebSocket from 'ws';

const [url, token] = process.argv.slice(2) as [string, string];
const SOCKETS = 16;
const PER_ROUND = 99;
const PERIOD_MS = 1_000;
const DOCUMENT = 'subscription { events { id type rolloutId payload createdAt } }';

const stats = { subscribes: 0, refused: {} as Record<string, number>, closes: {} as Record<string, number> };
const open: WebSocket[] = [];

for (let i = 0; i < SOCKETS; i++) {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as { type: string; payload?: Array<{ extensions?: { code?: string } }> };
    if (message.type === 'connection_ack') open.push(socket);
    if (message.type === 'error') {
      const code = message.payload?.[0]?.extensions?.code ?? 'unknown';
      stats.refused[code] = (stats.refused[code] ?? 0) + 1;
    }
  });
  socket.on('close', (code, reason) => {
    const key = `${code} ${reason.toString()}`;
    stats.closes[key] = (stats.closes[key] ?? 0) + 1;
  });
  socket.on('error', () => undefined);
}

let round = 0;
const timer = setInterval(() => {
  const r = round++;
  for (const socket of open) {
    if (socket.readyState !== WebSocket.OPEN) continue;
    // One write of 99 frames: the server's read hands them to graphql-ws together.
    const frames = Array.from({ length: PER_ROUND }, (_, s) => JSON.stringify({ id: `${r}-${s}`, type: 'subscribe', payload: { query: DOCUMENT } }));
    socket.send(frames.shift()!, { fin: true });
    for (const frame of frames) socket.send(frame);
    stats.subscribes += PER_ROUND;
    setTimeout(() => {
      if (socket.readyState !== WebSocket.OPEN) return;
      for (let s = 0; s < PER_ROUND; s++) socket.send(JSON.stringify({ id: `${r}-${s}`, type: 'complete' }));
    }, PERIOD_MS / 2);
  }
}, PERIOD_MS);

process.once('SIGTERM', () => {
  clearInterval(timer);
  console.log(JSON.stringify(stats));
  for (const socket of open) socket.terminate();
  setTimeout(() => process.exit(0), 100);
});
