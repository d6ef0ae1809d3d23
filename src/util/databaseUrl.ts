import path from 'node:path';

/**
 * Which history store a DATABASE_URL names: `file:…` → SQLite (the embedded default), `postgresql://…` (or
 * `postgres://…`) → PostgreSQL. Anything else is refused with a reason. Used by loadConfig (to fail at start with a
 * clear message) and by openDatabase.
 */
export type DatabaseTarget = { provider: 'sqlite'; file: string } | { provider: 'postgresql'; url: string; connectionLimit: number };

/**
 * Connections one replica's stores open to PostgreSQL (one pool; besides its LISTEN connections and, at start, the
 * migrations' one) unless the URL says `?connection_limit=N` (the parameter name Prisma documents for the same
 * purpose). See deploy/ha/README.md.
 */
export const DEFAULT_CONNECTION_LIMIT = 10;
const MIN_CONNECTION_LIMIT = 3;
const MAX_CONNECTION_LIMIT = 500;

export class DatabaseUrlError extends Error {}

/** The URL with its password masked, for messages and logs. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@]*@/i, '$1***@');
}

export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (url.startsWith('file:')) {
    const raw = url.slice('file:'.length).split('?')[0]!;
    if (raw === '') throw new DatabaseUrlError('a file: URL needs a path, such as file:./data/rollplane.db');
    // Relative paths are relative to the working directory.
    return { provider: 'sqlite', file: path.resolve(raw) };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new DatabaseUrlError(`not a valid URL (got "${redactDatabaseUrl(url)}")`);
    }
    if (!parsed.hostname) throw new DatabaseUrlError(`a postgresql:// URL needs a host (got "${redactDatabaseUrl(url)}")`);
    if (parsed.pathname.length <= 1) {
      throw new DatabaseUrlError(
        `a postgresql:// URL needs a database name, such as postgresql://user:password@host:5432/rollplane (got "${redactDatabaseUrl(url)}")`,
      );
    }
    const limit = parsed.searchParams.get('connection_limit');
    let connectionLimit = DEFAULT_CONNECTION_LIMIT;
    if (limit !== null) {
      connectionLimit = Number(limit);
      if (!/^\d+$/.test(limit) || connectionLimit < MIN_CONNECTION_LIMIT || connectionLimit > MAX_CONNECTION_LIMIT) {
        throw new DatabaseUrlError(`connection_limit must be a whole number from ${MIN_CONNECTION_LIMIT} to ${MAX_CONNECTION_LIMIT} (got "${limit}")`);
      }
      // rollplane's setting, not the driver's: taken out so that no driver reads it as one of its own.
      parsed.searchParams.delete('connection_limit');
      url = parsed.toString();
    }
    return { provider: 'postgresql', url, connectionLimit };
  }
  throw new DatabaseUrlError(
    `must be a SQLite file: URL such as file:./data/rollplane.db or a PostgreSQL URL such as postgresql://user:password@host:5432/rollplane (got "${redactDatabaseUrl(url)}")`,
  );
}
