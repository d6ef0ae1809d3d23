import type { IncomingMessage } from 'node:http';
import { AppError, ErrorCode } from '../errors.js';

export class PayloadTooLargeError extends AppError {
  constructor(limit: number) {
    super(ErrorCode.BadUserInput, `request body exceeds ${limit} bytes`, { details: { limit } });
  }
}

/** Reads a request body up to `limit` bytes; refuses (without buffering the rest) anything larger. */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new PayloadTooLargeError(limit));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new PayloadTooLargeError(limit));
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
