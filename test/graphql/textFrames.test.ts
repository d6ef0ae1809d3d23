import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { frameHeaderLength, rawSocketOf, textFrames } from '../../src/graphql/textFrames.js';
import { until } from '../helpers/until.js';

/** ws's own frame builder (exported, untyped): what `send(string)` writes on a server socket without compression. */
const Sender = createRequire(import.meta.url)('ws').Sender as {
  frame(data: Buffer, options: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean }): Buffer[];
};
const wsFrame = (text: string) => Buffer.concat(Sender.frame(Buffer.from(text), { fin: true, opcode: 1, mask: false, readOnly: true, rsv1: false }));

const PREFIX = Buffer.from('{"id":"op-1","type":"next","payload":');
const SUFFIX = Buffer.from('}');

describe('textFrames', () => {
  it('writes the bytes ws writes for send(string), at every length encoding', () => {
    // Message lengths around the 7-bit, 16-bit and 64-bit length encodings (125/126, 65535/65536), multi-byte text too.
    const overhead = PREFIX.length + SUFFIX.length;
    const payloads = [0, 125 - overhead, 126 - overhead, 65535 - overhead, 65536 - overhead, 70_000].map((n) => Buffer.from('x'.repeat(Math.max(0, n))));
    payloads.push(Buffer.from(JSON.stringify({ data: { name: 'pool-ü-✓-😀' } })));
    const frames = textFrames(PREFIX, payloads, SUFFIX);
    const expected = Buffer.concat(payloads.map((p) => wsFrame(`${PREFIX}${p}${SUFFIX}`)));
    expect(frames.equals(expected)).toBe(true);
    expect(payloads.map((p) => frameHeaderLength(p.length + overhead))).toEqual([2, 2, 4, 4, 10, 10, 2]);
  });

  it('gives nothing for no messages', () => {
    expect(textFrames(PREFIX, [], SUFFIX).length).toBe(0);
  });
});

describe('rawSocketOf', () => {
  let server: WebSocketServer;
  let url: string;

  beforeAll(async () => {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('lets frames written directly and messages sent by ws reach a ws client as valid messages, in the order written', async () => {
    const accepted = once(server, 'connection');
    const client = new WebSocket(url);
    const received: string[] = [];
    client.on('message', (data, isBinary) => received.push(isBinary ? '(binary)' : String(data)));
    const [socket] = (await accepted) as [WebSocket];
    await once(client, 'open');
    const raw = rawSocketOf(socket);
    expect(raw).toBeDefined();
    const parts = ['{"n":1}', '{"n":2}', `{"big":"${'y'.repeat(70_000)}"}`].map((p) => Buffer.from(p));
    socket.send('first, by ws');
    raw!.write(textFrames(PREFIX, parts, SUFFIX));
    socket.send('last, by ws');
    const expected = ['first, by ws', ...parts.map((p) => `${PREFIX}${p}${SUFFIX}`), 'last, by ws'];
    await until('every message arrived', () => received.length >= expected.length);
    expect(received).toEqual(expected);
    for (const message of received.slice(1, -1)) expect(JSON.parse(message)).toMatchObject({ id: 'op-1', type: 'next' });
    client.close();
    await once(client, 'close');
  });

  it('is undefined on a connection that negotiated permessage-deflate (its frames must go through ws)', async () => {
    const compressing = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: true });
    await once(compressing, 'listening');
    try {
      const accepted = once(compressing, 'connection');
      const client = new WebSocket(`ws://127.0.0.1:${(compressing.address() as AddressInfo).port}`, { perMessageDeflate: true });
      const [socket] = (await accepted) as [WebSocket];
      await once(client, 'open');
      expect(socket.extensions).toContain('permessage-deflate');
      expect(rawSocketOf(socket)).toBeUndefined();
      client.close();
      await once(client, 'close');
    } finally {
      await new Promise<void>((resolve) => compressing.close(() => resolve()));
    }
  });
});
