/**
 * The attacker of issue 34's finding F3, as a process of its own (its parsing must not slow the test's probes): one
 * viewer token, filtered replays that no index serves, each on a WebSocket of its own, SUBSCRIPTIONS of each shape,
 * all completed and opened again every RESUBSCRIBE_MS; one subscription for the few events named `needle`, opened
 * again whenever it has them all; and one HTTP client asking, one request after another, for a page of one event with
 * a random name. Runs until SIGTERM, then prints one JSON line with what it got.
 *
 * argv: <graphql url> <viewer token> <needles in the history>
 */
import WebSocket from 'ws';

const [url, token, needlesText] = process.argv.slice(2) as [string, string, string];
const needles = Number(needlesText);
const SUBSCRIPTIONS = 10;
const RESUBSCRIBE_MS = 300;
/** The shapes of the finding: a filter no index served, each replayed from the start of the history. */
const SHAPES = [
  'subscription { events(after: "0", filter: { name: "nonexistent" }) { id } }',
  'subscription { events(after: "0", filter: { kind: AGENT_POOL, name: "zz" }) { id } }',
  'subscription { agentRecreated(after: "0", filter: { name: "zz" }) { eventId } }',
  'subscription { events(after: "0", filter: { since: "2099-01-01T00:00:00.000Z" }) { id } }',
  'subscription { events(after: "0", filter: { types: [AgentRecreated], namespace: "zz" }) { id } }',
];
const NEEDLES = 'subscription { events(after: "0", filter: { name: "needle" }) { id } }';

let subscribes = 0;
let errors = 0;
let rateLimited = 0;
let needlesReceived = 0;
let needleReplays = 0;
let pages = 0;
let refusedPages = 0;
let stopped = false;

function openSocket(query: string, count: number, resubscribeMs: number | undefined, onNext?: (id: string, subscribeAgain: () => void) => void): void {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  let nextId = 0;
  let open: string[] = [];
  const subscribe = () => {
    const id = String(nextId++);
    open.push(id);
    subscribes++;
    socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
    return id;
  };
  let timer: NodeJS.Timeout | undefined;
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (data) => {
    const text = data.toString();
    if (text.startsWith('{"type":"connection_ack"')) {
      for (let i = 0; i < count; i++) subscribe();
      if (resubscribeMs !== undefined) {
        timer = setInterval(() => {
          if (stopped) return;
          for (const id of open) socket.send(JSON.stringify({ id, type: 'complete' }));
          open = [];
          for (let i = 0; i < count; i++) subscribe();
        }, resubscribeMs);
      }
      return;
    }
    // Refusals for the caller's budget are the limits working (every operation costs at least 50, live events their
    // share); any other error is a failure of the service.
    if (text.includes('"type":"error"')) {
      if (text.includes('"RATE_LIMITED"')) rateLimited++;
      else errors++;
    }
    const id = /"id":"([^"]*)"/.exec(text)?.[1];
    if (id === undefined || !text.includes('"type":"next"')) return;
    onNext?.(id, () => {
      socket.send(JSON.stringify({ id, type: 'complete' }));
      open = open.filter((o) => o !== id);
      subscribe();
    });
  });
  socket.on('close', () => {
    clearInterval(timer);
    if (!stopped) setTimeout(() => openSocket(query, count, resubscribeMs, onNext), 100);
  });
  socket.on('error', () => undefined);
}

async function pageLoop(): Promise<void> {
  while (!stopped) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        query: 'query($n: String) { events(first: 1, filter: { name: $n }) { edges { node { id } } } }',
        variables: { n: `n-${Math.random().toString(36).slice(2)}` },
      }),
    }).catch(() => undefined);
    const body = (await res?.json().catch(() => undefined)) as { data?: unknown } | undefined;
    if (body?.data) pages++;
    else {
      refusedPages++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

for (const shape of SHAPES) openSocket(shape, SUBSCRIPTIONS, RESUBSCRIBE_MS);
const seen = new Map<string, number>();
openSocket(NEEDLES, 1, undefined, (id, subscribeAgain) => {
  needlesReceived++;
  const count = (seen.get(id) ?? 0) + 1;
  seen.set(id, count);
  if (count === needles) {
    needleReplays++;
    seen.delete(id);
    subscribeAgain();
  }
});
void pageLoop();
process.on('SIGTERM', () => {
  stopped = true;
  process.stdout.write(`${JSON.stringify({ subscribes, errors, rateLimited, needlesReceived, needleReplays, pages, refusedPages })}\n`);
  process.exit(0);
});
