/**
 * The subscribers of `npm run bench -- feed`, run as a child process so that the server's process measures only the
 * server: reads one JSON job from argv (url, subscribers, query), opens that many graphql-ws connections, subscribes
 * each, and prints `ready` once all are subscribed. Then it reads one line from stdin, the events every subscriber must
 * receive (`FeedExpectation`: how many, and the sum of their ids), waits for them (or for `timeoutMs`) and prints one
 * JSON line of results: commit → client latency from each event's `createdAt` (stamped at commit on the same machine's
 * clock) to its arrival here.
 *
 * The clients share the machine's two cores with the server, so every microsecond they spend per message is added to
 * the latency of the messages queued behind it (a 50-event burst is 50,000 messages). They therefore speak WebSocket
 * by hand on a bare TCP socket (RFC 6455: the upgrade, masked frames out, unmasked frames in) and read a `next`
 * message's id and createdAt by position in the raw bytes, without decoding or parsing it; anything that does not
 * have exactly the expected shape is decoded and parsed as JSON, and a `next` with errors counts as an error. They
 * still check that each subscriber got every event once and in order: ids strictly increasing, as many as expected,
 * summing to the expected sum.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';

export interface FeedJob {
  url: string;
  subscribers: number;
  query: string;
  timeoutMs: number;
}

/** What every subscriber must have received. */
export interface FeedExpectation {
  events: number;
  idSum: number;
}

export interface FeedClientsResult {
  subscribers: number;
  deliveries: number;
  /** Subscribers that did not receive exactly the expected events (too few, other ids, errors, or a closed socket). */
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
  /** `next` messages that were not of the expected shape and were decoded and parsed whole (0 when the reading by position works). */
  parsedWhole: number;
}

/** Opened at most this many at a time: the server refuses more than 32 unauthenticated sockets per address. */
const CONNECT_BATCH = 25;
const OPERATION_ID = '1';
const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const OPCODE_TEXT = 0x1;
const OPCODE_CLOSE = 0x8;
const OPCODE_PING = 0x9;
const OPCODE_PONG = 0xa;

interface Subscriber {
  received: number;
  lastId: number;
  idSum: number;
  errors: number;
  closed: boolean;
}

const job = JSON.parse(process.argv[2] ?? '{}') as FeedJob;
/** Latencies in ms, preallocated and grown by doubling: one number per delivery, no per-message allocation. */
let latencies = new Float64Array(1 << 20);
let deliveries = 0;
let outOfOrder = 0;
let duplicates = 0;
let errors = 0;
let parsedWhole = 0;
let firstCommit = Infinity;
let lastArrival = 0;
const subscribers: Subscriber[] = [];
let onDelivery: (() => void) | undefined;

/** The start of every `next` this client can read by position: its own operation id, then the `events` field's id. */
const NEXT_HEAD = Buffer.from(`{"id":"${OPERATION_ID}","type":"next","payload":{"data":{"events":{"id":"`);
/** createdAt is the query's last field: the message ends with its value, then events, data, payload and message close. */
const CREATED_AT = Buffer.from('"createdAt":"');
const NEXT_TAIL = Buffer.from('"}}}}');
const QUOTE = 0x22;

/** Client → server frames are masked (RFC 6455 §5.3). Only the few control messages go this way. */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  if (payload.length > 65535) throw new Error('client frames here are small');
  const header = payload.length < 126 ? 2 : 4;
  const frame = Buffer.allocUnsafe(header + 4 + payload.length);
  frame[0] = 0x80 | opcode;
  if (header === 2) frame[1] = 0x80 | payload.length;
  else {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(payload.length, 2);
  }
  const mask = randomBytes(4);
  mask.copy(frame, header);
  for (let i = 0; i < payload.length; i++) frame[header + 4 + i] = payload[i]! ^ mask[i & 3]!;
  return frame;
}

function sendJson(socket: Socket, message: unknown): void {
  socket.write(clientFrame(OPCODE_TEXT, Buffer.from(JSON.stringify(message))));
}

function record(state: Subscriber, id: number, committed: number, arrival: number): void {
  if (id === state.lastId) duplicates++;
  else if (id < state.lastId) outOfOrder++;
  state.lastId = Math.max(state.lastId, id);
  state.idSum += id;
  state.received++;
  if (deliveries === latencies.length) {
    const grown = new Float64Array(latencies.length * 2);
    grown.set(latencies);
    latencies = grown;
  }
  latencies[deliveries++] = arrival - committed;
  if (committed < firstCommit) firstCommit = committed;
  if (arrival > lastArrival) lastArrival = arrival;
  onDelivery?.();
}

/** A `next` of the expected shape, read by position in [start, end): its event id and commit time; undefined otherwise. */
function readNext(data: Buffer, start: number, end: number): { id: number; committed: number } | undefined {
  if (end - start < NEXT_HEAD.length + NEXT_TAIL.length || data.compare(NEXT_HEAD, 0, NEXT_HEAD.length, start, start + NEXT_HEAD.length) !== 0) return;
  if (data.compare(NEXT_TAIL, 0, NEXT_TAIL.length, end - NEXT_TAIL.length, end) !== 0) return;
  let id = 0;
  let at = start + NEXT_HEAD.length;
  for (; at < end && data[at] !== QUOTE; at++) {
    const digit = data[at]! - 0x30;
    if (digit < 0 || digit > 9) return;
    id = id * 10 + digit;
  }
  const createdAt = data.lastIndexOf(CREATED_AT, end - NEXT_TAIL.length);
  if (createdAt <= at) return;
  const committed = Date.parse(data.toString('latin1', createdAt + CREATED_AT.length, end - NEXT_TAIL.length));
  return Number.isNaN(committed) ? undefined : { id, committed };
}

/** Any other text message: decoded and parsed (the handshake's few, and anything unexpected). */
function onOtherMessage(state: Subscriber, socket: Socket, text: string, arrival: number, subscribed: () => void): void {
  const message = JSON.parse(text) as { type: string; id?: string; payload?: { errors?: unknown; data?: { events?: { id: string; createdAt: string } } } };
  switch (message.type) {
    case 'connection_ack':
      sendJson(socket, { id: OPERATION_ID, type: 'subscribe', payload: { query: job.query } });
      subscribed();
      return;
    case 'next': {
      parsedWhole++;
      const event = message.payload?.data?.events;
      if (message.payload?.errors || !event) {
        errors++;
        state.errors++;
        return;
      }
      record(state, Number(event.id), Date.parse(event.createdAt), arrival);
      return;
    }
    case 'error':
      errors++;
      state.errors++;
      return;
    case 'ping':
      sendJson(socket, { type: 'pong' });
      return;
    default:
      return;
  }
}

function open(): Promise<void> {
  return new Promise((resolve, reject) => {
    const state: Subscriber = { received: 0, lastId: 0, idSum: 0, errors: 0, closed: false };
    subscribers.push(state);
    const key = randomBytes(16).toString('base64');
    const request = http.request(job.url, {
      agent: false,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Protocol': 'graphql-transport-ws',
      },
    });
    request.once('error', reject);
    request.once('response', (response) => reject(new Error(`the server answered the upgrade with ${response.statusCode}`)));
    request.once('upgrade', (response, socket, head) => {
      const accept = createHash('sha1')
        .update(key + WS_GUID)
        .digest('base64');
      if (response.headers['sec-websocket-accept'] !== accept) return reject(new Error('bad Sec-WebSocket-Accept'));
      socket.setNoDelay(true);
      const closed = () => {
        state.closed = true;
        onDelivery?.();
      };
      socket.once('close', closed);
      socket.on('error', () => {});
      let pending: Buffer = head;
      const onData = (chunk: Buffer) => {
        const arrival = Date.now();
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        let at = 0;
        // Whole frames only; a partial one waits for the next chunk.
        for (;;) {
          if (pending.length - at < 2) break;
          const opcode = pending[at]! & 0x0f;
          let length = pending[at + 1]! & 0x7f;
          let header = 2;
          if (length === 126) {
            if (pending.length - at < 4) break;
            length = pending.readUInt16BE(at + 2);
            header = 4;
          } else if (length === 127) {
            if (pending.length - at < 10) break;
            length = pending.readUInt32BE(at + 2) * 2 ** 32 + pending.readUInt32BE(at + 6);
            header = 10;
          }
          if (pending.length - at < header + length) break;
          const start = at + header;
          const end = start + length;
          at = end;
          if ((pending[start - header]! & 0x80) === 0 || (pending[start - header + 1]! & 0x80) !== 0) {
            // Fragmented or masked: a server does neither for these messages.
            errors++;
            state.errors++;
            continue;
          }
          if (opcode === OPCODE_TEXT) {
            const next = readNext(pending, start, end);
            if (next) record(state, next.id, next.committed, arrival);
            else onOtherMessage(state, socket, pending.toString('utf8', start, end), arrival, resolve);
          } else if (opcode === OPCODE_PING) socket.write(clientFrame(OPCODE_PONG, pending.subarray(start, end)));
          else if (opcode === OPCODE_CLOSE) socket.end();
        }
        pending = at === pending.length ? Buffer.alloc(0) : pending.subarray(at);
      };
      socket.on('data', onData);
      sendJson(socket, { type: 'connection_init', payload: {} });
      if (head.length > 0) onData(Buffer.alloc(0));
    });
    request.end();
  });
}

for (let i = 0; i < job.subscribers; i += CONNECT_BATCH) {
  await Promise.all(Array.from({ length: Math.min(CONNECT_BATCH, job.subscribers - i) }, () => open()));
}
process.stdout.write('ready\n');
const cpuAtReady = process.cpuUsage();

const lines = createInterface({ input: process.stdin });
const expected = JSON.parse(await new Promise<string>((resolve) => lines.once('line', resolve))) as FeedExpectation;
lines.close();
const complete = () => subscribers.every((s) => s.closed || s.received >= expected.events);
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

const sorted = latencies.subarray(0, deliveries).sort();
const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN);
const cpu = process.cpuUsage(cpuAtReady);
const result: FeedClientsResult = {
  subscribers: job.subscribers,
  deliveries,
  incomplete: subscribers.filter((s) => s.received !== expected.events || s.idSum !== expected.idSum || s.errors > 0).length,
  outOfOrder,
  duplicates,
  errors,
  p50Ms: at(0.5),
  p99Ms: at(0.99),
  maxMs: sorted.length ? sorted[sorted.length - 1]! : NaN,
  spanMs: lastArrival - firstCommit,
  clientCpuSeconds: Math.round(((cpu.user + cpu.system) / 1e6) * 100) / 100,
  parsedWhole,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
