import path from 'node:path';

/**
 * Which history store a DATABASE_URL names: `file:…` → SQLite (the embedded default), `postgresql://…` (or
 * `postgres://…`) → PostgreSQL. Anything else is refused with a reason. Used by loadConfig (to fail at start with a
 * clear message) and by openDatabase.
 */
export type DatabaseTarget = { provider: 'sqlite'; file: string } | { provider: 'postgresql'; url: string };

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
      throw new DatabaseUrlError(`a postgresql:// URL needs a database name, such as postgresql://user:password@host:5432/rollplane (got "${redactDatabaseUrl(url)}")`);
    }
    return { provider: 'postgresql', url };
  }
  throw new DatabaseUrlError(
    `must be a SQLite file: URL such as file:./data/rollplane.db or a PostgreSQL URL such as postgresql://user:password@host:5432/rollplane (got "${redactDatabaseUrl(url)}")`,
  );
}
