import { accessSync, constants } from 'node:fs';
import { createServer } from 'node:net';

/** What starting a local server process needs (a local Prometheus, the tests' PostgreSQL). */

/** Whether `file` exists and this process may execute it. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A TCP port free on 127.0.0.1 right now (another process may take it before the caller binds: retry on failure). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
