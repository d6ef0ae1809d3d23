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

/** Where util-linux's setpriv is (it is Essential in Debian), or undefined. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find(isExecutable);

/**
 * The command and arguments that run `binary` so that it is SIGKILLed when this process dies, however it dies (a
 * SIGKILL or a crash runs no cleanup of ours): `setpriv --pdeathsig KILL` sets Linux's parent-death signal and execs
 * the binary in place, so the child's pid is the binary's own. The signal is tied to the thread that spawned it: spawn
 * from the main thread. Without setpriv (not Linux, or a machine without util-linux) the binary runs as it is, and
 * outlives a killed parent as before.
 */
export function diesWithParent(binary: string, args: readonly string[]): { command: string; args: string[] } {
  return SETPRIV ? { command: SETPRIV, args: ['--pdeathsig', 'KILL', '--', binary, ...args] } : { command: binary, args: [...args] };
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
