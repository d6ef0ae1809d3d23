import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { freeLoopbackPort, isExecutable } from '../../src/util/localProcess.js';

/**
 * A throwaway PostgreSQL server for a test file: `initdb` in a temporary directory, a free TCP port on 127.0.0.1,
 * fsync off, no Unix socket; stopped and removed after the file. Uses the PostgreSQL binaries of the machine (Debian's
 * `postgresql` package puts them in /usr/lib/postgresql/<version>/bin, outside PATH).
 *
 * Where there are none, the file's tests are reported as "skipped: no PostgreSQL binaries" — unless
 * ROLLPLANE_REQUIRE_POSTGRES=1 (CI sets it in .ci/run), which turns the skip into a failure so CI always runs them.
 */

const run = promisify(execFile);

export interface PostgresBinaries {
  dir: string;
  initdb: string;
  pgCtl: string;
}

/** PATH first, then /usr/local/bin, then the newest /usr/lib/postgresql/<version>/bin. */
export function findPostgresBinaries(env: NodeJS.ProcessEnv = process.env): PostgresBinaries | undefined {
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => path.join(debian, v, 'bin'))
    : [];
  const dirs = [...(env.PATH ?? '').split(path.delimiter).filter(Boolean), '/usr/local/bin', ...versions];
  for (const dir of dirs) {
    const initdb = path.join(dir, 'initdb');
    const pgCtl = path.join(dir, 'pg_ctl');
    // pg_ctl starts the `postgres` beside it (symlinks resolved), so all three must be there.
    if (isExecutable(initdb) && isExecutable(pgCtl) && isExecutable(path.join(dir, 'postgres'))) return { dir, initdb, pgCtl };
  }
  return undefined;
}

export const postgresRequired = process.env.ROLLPLANE_REQUIRE_POSTGRES === '1';
export const NO_POSTGRES = 'skipped: no PostgreSQL binaries';

export interface PostgresServer {
  /** Superuser URL of the `postgres` database. */
  readonly adminUrl: string;
  readonly port: number;
  /** Creates an empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Runs SQL as the superuser on the `postgres` database. */
  admin<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<T>>;
  /**
   * Shuts the server down (`pg_ctl stop -m <mode>`; `fast` disconnects every client and aborts their transactions)
   * but keeps its data directory and port, for fault tests; `restart` brings it back on both.
   */
  shutDown(mode?: 'fast' | 'immediate'): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * initdb and postgres refuse to run as root: as root, the server runs as the `postgres` user if the machine has one
 * (Debian's package creates it), else as `nobody`, and owns the temporary directory.
 */
function unprivilegedUser(): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'));
  for (const name of ['postgres', 'nobody']) {
    const entry = passwd.find((fields) => fields[0] === name);
    if (entry) return { name, uid: Number(entry[2]), gid: Number(entry[3]) };
  }
  throw new Error('running as root and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

let databases = 0;

/**
 * `durable`: fsync and synchronous commit on, as a production server runs (each COMMIT waits for its WAL flush);
 * off by default, which tests and most benchmark runs do not need.
 */
export async function startPostgres(bin: PostgresBinaries, options: { durable?: boolean } = {}): Promise<PostgresServer> {
  const user = unprivilegedUser();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-pg-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'server.log');
  if (user) chownSync(dir, user.uid, user.gid);
  const as = (file: string, args: string[]) => (user ? run('runuser', ['-u', user.name, '--', file, ...args]) : run(file, args));
  try {
    await as(bin.initdb, ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(error as { stderr?: string }).stderr ?? (error as Error).message}`, { cause: error });
  }
  // A free port can be taken between the probe and the server's bind: try a few.
  let port = 0;
  const serverOptions = () =>
    [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      "-c unix_socket_directories=''", // TCP only: no socket path to share or to quote
      ...(options.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
      '-c timezone=UTC',
    ].join(' ');
  const startServer = () => as(bin.pgCtl, ['-D', data, '-l', log, '-w', '-t', '60', '-o', serverOptions(), 'start']);
  for (let attempt = 1; ; attempt++) {
    port = await freeLoopbackPort();
    try {
      await startServer();
      break;
    } catch (error) {
      if (attempt >= 3) {
        const serverLog = existsSync(log) ? readFileSync(log, 'utf8') : '';
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`PostgreSQL did not start: ${(error as Error).message}\n${serverLog}`, { cause: error });
      }
    }
  }
  const adminUrl = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const adminPool = new pg.Pool({ connectionString: adminUrl, max: 2 });
  // Idle connections dropped by shutDown() are reported here; unhandled, the EventEmitter would throw them.
  adminPool.on('error', () => {});
  let stopped = false;
  return {
    adminUrl,
    port,
    async createDatabase(name = `t${process.pid}_${++databases}`) {
      await adminPool.query(`CREATE DATABASE "${name}"`);
      return `postgresql://postgres@127.0.0.1:${port}/${name}`;
    },
    admin: (text, params) => adminPool.query(text, params),
    async shutDown(mode = 'fast') {
      await as(bin.pgCtl, ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    },
    async restart() {
      // The port was free while the server was down: another process may have taken it, which fails here, loudly.
      await startServer();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await adminPool.end().catch(() => undefined);
      await as(bin.pgCtl, ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `describe` for a file (or block) that needs PostgreSQL: starts one server before its tests and stops it after.
 * `body` receives a getter for the server (valid inside tests and hooks). Without binaries the block is skipped with
 * "skipped: no PostgreSQL binaries", or fails when ROLLPLANE_REQUIRE_POSTGRES=1.
 */
export function describeWithPostgres(name: string, body: (server: () => PostgresServer) => void): void {
  const bin = findPostgresBinaries();
  if (!bin) {
    if (postgresRequired) {
      describe(name, () => {
        it('needs PostgreSQL binaries (ROLLPLANE_REQUIRE_POSTGRES=1)', () => {
          throw new Error('no PostgreSQL binaries found in PATH, /usr/local/bin or /usr/lib/postgresql/*/bin, and ROLLPLANE_REQUIRE_POSTGRES=1');
        });
      });
    } else {
      describe.skip(`${name} (${NO_POSTGRES})`, () =>
        body(() => {
          throw new Error(NO_POSTGRES);
        }));
    }
    return;
  }
  describe(name, () => {
    let server: PostgresServer | undefined;
    beforeAll(async () => {
      server = await startPostgres(bin);
    });
    afterAll(async () => {
      await server?.stop();
    });
    body(() => {
      if (!server) throw new Error('the PostgreSQL server is not started yet (use it inside tests or hooks)');
      return server;
    });
  });
}
