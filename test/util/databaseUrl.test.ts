import { describe, expect, it } from 'vitest';
import { DEFAULT_CONNECTION_LIMIT, parseDatabaseUrl } from '../../src/util/databaseUrl.js';

describe('connection_limit in a PostgreSQL DATABASE_URL', () => {
  it('defaults to 10 connections per replica', () => {
    const target = parseDatabaseUrl('postgresql://rp:secret@db.example:5432/rollplane?sslmode=require');
    expect(target).toEqual({
      provider: 'postgresql',
      url: 'postgresql://rp:secret@db.example:5432/rollplane?sslmode=require',
      connectionLimit: DEFAULT_CONNECTION_LIMIT,
    });
    expect(DEFAULT_CONNECTION_LIMIT).toBe(10);
  });

  it('takes the limit from the URL and leaves it out of the URL the drivers get', () => {
    const target = parseDatabaseUrl('postgresql://rp:secret@db.example:5432/rollplane?connection_limit=30&sslmode=require');
    expect(target).toEqual({ provider: 'postgresql', url: 'postgresql://rp:secret@db.example:5432/rollplane?sslmode=require', connectionLimit: 30 });
  });

  it.each(['0', '2', '501', '10.5', 'ten', ''])('refuses connection_limit=%s with the range, and no password', (value) => {
    expect(() => parseDatabaseUrl(`postgresql://rp:secret@db.example/rollplane?connection_limit=${value}`)).toThrowError(
      /connection_limit must be a whole number from 3 to 500/,
    );
    expect(() => parseDatabaseUrl(`postgresql://rp:secret@db.example/rollplane?connection_limit=${value}`)).not.toThrowError(/secret/);
  });
});
