/**
 * The subscribers of `npm run bench -- feed`, run as a child process so that the server's process measures only the
 * server: reads one JSON job from argv (url, subscribers, query), opens that many graphql-ws connections (the protocol
 * by hand on `ws`, to keep the client's own cost low), subscribes each, and prints `ready` once all are subscribed.
 * Then it reads one line from stdin, the number of events every subscriber must receive, waits for them (or for
 * `timeoutMs`) and prints one JSON line of results: commit → client latency from each event's `createdAt` (stamped
 * at commit on the same machine's clock) to its arrival here.
 */
import { createInterface } from 'node:readline';
import WebSocket from 'ws';

export interface FeedJob {
  url: string;
  subscribers: number;
  query: string;
  timeoutMs: number;
}

export interface FeedClientsResult {
  subscribers: number;
  deliveries: number;
  /** Subscribers that received fewer than the expected events (or errors, or a closed socket). */
  incomplete: number;
  outOfOrder: number;
  duplicates: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** From the first delivered event's commit to the last delivery, ms. */
  spanMs: number;
  /** CPU this client process used from `ready` to the end: the subscribers share the machine with the server. */
  clientCpuSeconds: number;
}

/** Opened at most this many at a time: the server refuses more than 32 unauthenticated sockets per address. */
const CONNECT_BATCH = 25;

interface Subscriber {
  received: number;
  lastId: number;
  seen: Set<number>;
  closed: boolean;
}

const job = JSON.parse(process.argv[2] ?? '{}') as FeedJob;
const latencies: number[] = [];
let outOfOrder = 0;
let duplicates = 0;
let errors = 0;
let firstCommit = Infinity;
let lastArrival = 0;
const subscribers: Subscriber[] = [];
let onDelivery: (() => void) | undefined;

const EVENT_ID = '"data":{"events":{"id":"';
const CREATED_AT = '"createdAt":"';

/** id and createdAt of a `next` message without errors, found by position; undefined for anything else. */
function nextFields(text: string): { id: number; committed: number } | undefined {
  if (!text.includes('"type":"next"') || text.includes('"errors"')) return undefined;
  const idAt = text.indexOf(EVENT_ID);
  const createdAt = text.lastIndexOf(CREATED_AT);
  if (idAt < 0 || createdAt < 0) return undefined;
  const idStart = idAt + EVENT_ID.length;
  const createdStart = createdAt + CREATED_AT.length;
  return { id: Number(text.slice(idStart, text.indexOf('"', idStart))), committed: Date.parse(text.slice(createdStart, text.indexOf('"', createdStart))) };
}

function record(state: Subscriber, id: number, committed: number, arrival: number): void {
  if (state.seen.has(id)) duplicates++;
  if (id <= state.lastId) outOfOrder++;
  state.seen.add(id);
  state.lastId = Math.max(state.lastId, id);
  state.received++;
  latencies.push(arrival - committed);
  firstCommit = Math.min(firstCommit, committed);
  lastArrival = Math.max(lastArrival, arrival);
  onDelivery?.();
}

function open(): Promise<void> {
  return new Promise((resolve, reject) => {
    const state: Subscriber = { received: 0, lastId: 0, seen: new Set(), closed: false };
    subscribers.push(state);
    // The clients share the machine with the server: spend as little as possible per message (no UTF-8 validation,
    // `next` messages read by position rather than parsed whole).
    const socket = new WebSocket(job.url.replace(/^http/, 'ws'), 'graphql-transport-ws', { perMessageDeflate: false, skipUTF8Validation: true });
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    socket.once('error', reject);
    socket.on('close', () => {
      state.closed = true;
      onDelivery?.();
    });
    socket.on('message', (data) => {
      const arrival = Date.now();
      const text = String(data);
      const fast = nextFields(text);
      if (fast) {
        record(state, fast.id, fast.committed, arrival);
        return;
      }
      const message = JSON.parse(text) as { type: string; payload?: any };
      switch (message.type) {
        case 'connection_ack':
          socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: job.query } }));
          resolve();
          return;
        case 'next': {
          if (message.payload.errors) {
            errors++;
            return;
          }
          const event = message.payload.data.events as { id: string; createdAt: string };
          record(state, Number(event.id), Date.parse(event.createdAt), arrival);
          return;
        }
        case 'error':
          errors++;
          return;
        default:
          return;
      }
    });
  });
}

for (let i = 0; i < job.subscribers; i += CONNECT_BATCH) {
  await Promise.all(Array.from({ length: Math.min(CONNECT_BATCH, job.subscribers - i) }, () => open()));
}
process.stdout.write('ready\n');
const cpuAtReady = process.cpuUsage();

const lines = createInterface({ input: process.stdin });
const expected = Number(await new Promise<string>((resolve) => lines.once('line', resolve)));
lines.close();
const complete = () => subscribers.every((s) => s.closed || s.received >= expected);
await new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, job.timeoutMs);
  onDelivery = () => {
    if (complete()) {
      clearTimeout(timer);
      resolve();
    }
  };
  onDelivery();
});

const sorted = Float64Array.from(latencies).sort();
const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN);
const result: FeedClientsResult = {
  subscribers: job.subscribers,
  deliveries: latencies.length,
  incomplete: subscribers.filter((s) => s.received < expected).length,
  outOfOrder,
  duplicates,
  errors,
  p50Ms: at(0.5),
  p99Ms: at(0.99),
  maxMs: sorted.length ? sorted[sorted.length - 1]! : NaN,
  spanMs: lastArrival - firstCommit,
  clientCpuSeconds: Math.round(((process.cpuUsage(cpuAtReady).user + process.cpuUsage(cpuAtReady).system) / 1e6) * 100) / 100,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
