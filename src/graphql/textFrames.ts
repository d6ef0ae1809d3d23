import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

/**
 * WebSocket text frames built by the fan-out itself, so that a burst of `next` messages reaches a subscriber's socket
 * as one buffer and one write, and subscribers with the same operation id share that buffer (issue 17: ws.send per
 * message encoded the same payload once per subscriber, and the stream machinery around one write per frame was
 * most of the fan-out's CPU). The frames are exactly what ws writes for `send(string)` on a server socket without
 * compression (RFC 6455 §5.2: FIN, opcode 1, unmasked, the shortest length encoding), one frame per message.
 */

const FIN_TEXT = 0x81;

/** Bytes of the header of an unmasked frame whose payload is `length` bytes. */
export function frameHeaderLength(length: number): number {
  return length < 126 ? 2 : length < 65536 ? 4 : 10;
}

/** Writes the header of an unmasked, final text frame of `length` payload bytes at `offset`; returns the offset after it. */
export function writeFrameHeader(target: Buffer, offset: number, length: number): number {
  target[offset] = FIN_TEXT;
  if (length < 126) {
    target[offset + 1] = length;
    return offset + 2;
  }
  if (length < 65536) {
    target[offset + 1] = 126;
    target.writeUInt16BE(length, offset + 2);
    return offset + 4;
  }
  target[offset + 1] = 127;
  // 2^53 bounds any JavaScript length, so the high word comes from a division rather than a 64-bit integer.
  target.writeUInt32BE(Math.floor(length / 2 ** 32), offset + 2);
  target.writeUInt32BE(length >>> 0, offset + 6);
  return offset + 10;
}

/**
 * One text frame per message, each message being `prefix + parts[i] + suffix`, in one buffer. The caller keeps the
 * buffer unchanged once written: the same buffer may be queued on many sockets.
 */
export function textFrames(prefix: Buffer, parts: readonly Buffer[], suffix: Buffer): Buffer {
  let total = 0;
  for (const part of parts) {
    const length = prefix.length + part.length + suffix.length;
    total += frameHeaderLength(length) + length;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const part of parts) {
    at = writeFrameHeader(out, at, prefix.length + part.length + suffix.length);
    at += prefix.copy(out, at);
    at += part.copy(out, at);
    at += suffix.copy(out, at);
  }
  return out;
}

/**
 * The TCP socket under a ws WebSocket, when frames may be written to it directly: no extension was negotiated (a
 * permessage-deflate connection's frames must go through ws's Sender, which queues them while it compresses) and ws
 * keeps the socket where ws 8 does. Without extensions ws's Sender writes each frame to this socket synchronously
 * and queues nothing (it queues only while compressing, or reading a Blob, which nothing here sends), so frames
 * written here and frames ws writes (graphql-ws's own messages) reach the wire in the order they were written, and
 * `bufferedAmount` counts both. Undefined otherwise: the caller then uses `send`.
 */
export function rawSocketOf(socket: WebSocket): Socket | undefined {
  if (socket.extensions !== '') return undefined;
  const tcp = (socket as unknown as { _socket?: Partial<Socket> })._socket;
  return tcp && typeof tcp.write === 'function' && typeof tcp.cork === 'function' ? (tcp as Socket) : undefined;
}
