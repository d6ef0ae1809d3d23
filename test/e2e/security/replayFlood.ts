/**
 * The attacker of issue 34, finding 2, as a process of its own (so that its parsing does not slow the test's own
 * probes): one viewer token, SOCKETS WebSockets with SUBSCRIPTIONS `events(after: "0")` each, every subscription
 * completed and opened again as soon as it has replayed the whole history, plus a loop of `events(first: 1000)` pages
 * over HTTP. Runs until SIGTERM, then prints one JSON line with what it received.
 *
 * argv: <graphql url> <viewer token> <events in the history>
 */
import WebSocket from 'ws';

const [url, token, historyText] = process.argv.slice(2) as [string, string, string];
const history = Number(historyText);
const SOCKETS = 4;
const SUBSCRIPTIONS = 25;
const QUERY = 'subscription { events(after: "0") { id type rolloutId object { namespace name } payload createdAt } }';

let replays = 0;
let received = 0;
let closes = 0;
let pages = 0;
let refusedPages = 0;
let stopped = false;

function openSocket(): void {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  let nextId = 0;
  const counts = new Map<string, number>();
  const subscribe = () => {
    const id = String(nextId++);
    counts.set(id, 0);
    socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query: QUERY } }));
  };
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (data) => {
    const text = data.toString();
    if (text.startsWith('{"type":"connection_ack"')) {
      for (let i = 0; i < SUBSCRIPTIONS; i++) subscribe();
      return;
    }
    const id = /"id":"([^"]*)"/.exec(text)?.[1];
    if (id === undefined || !text.includes('"type":"next"')) return;
    received++;
    const count = (counts.get(id) ?? 0) + 1;
    counts.set(id, count);
    if (count === history && !stopped) {
      replays++;
      counts.delete(id);
      socket.send(JSON.stringify({ id, type: 'complete' }));
      subscribe();
    }
  });
  socket.on('close', () => {
    closes++;
    if (!stopped) setTimeout(openSocket, 100);
  });
  socket.on('error', () => undefined);
}

async function pageLoop(): Promise<void> {
  let after: string | null = null;
  while (!stopped) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        query: 'query($after: String) { events(first: 1000, after: $after) { pageInfo { endCursor hasNextPage } edges { node { id type payload } } } }',
        variables: { after },
      }),
    }).catch(() => undefined);
    const body = (await res?.json().catch(() => undefined)) as { data?: { events: { pageInfo: { endCursor: string; hasNextPage: boolean } } } } | undefined;
    if (body?.data) {
      pages++;
      after = body.data.events.pageInfo.hasNextPage ? body.data.events.pageInfo.endCursor : null;
    } else {
      refusedPages++;
      // Refused (429): try again at once, as an attacker would.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

for (let i = 0; i < SOCKETS; i++) openSocket();
// How far it got, for the test to wait on (underAttack's `ranEnough`): its budget paces it, so how much it receives
// while the probes run depends on the machine's speed, not only on rollplane.
setInterval(() => process.stdout.write(`received ${received} pages ${pages}\n`), 200).unref();
if (!process.env.NO_PAGES) {
  void pageLoop();
  void pageLoop();
}
process.on('SIGTERM', () => {
  stopped = true;
  process.stdout.write(`${JSON.stringify({ replays, received, closes, pages, refusedPages })}\n`);
  process.exit(0);
});
