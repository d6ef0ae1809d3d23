import { describe, expect, it } from 'vitest';
import { databaseUnreachableMessage, isDatabaseUnreachable } from '../../src/util/databaseUnreachable.js';

describe('isDatabaseUnreachable', () => {
  it.each([
    ['a refused connection (pg)', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect', errno: -111 })],
    ['a server shutting down (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' })],
    ['a server starting up (57P03)', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['a connection exception (class 08)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['a connection pg ended, without a code', new Error('Connection terminated unexpectedly')],
    ['a pool wait that timed out', new Error('timeout exceeded when trying to connect')],
    ['Prisma P1001', Object.assign(new Error("Can't reach database server at 127.0.0.1:5432"), { code: 'P1001', name: 'PrismaClientKnownRequestError' })],
    ['Prisma P1017', Object.assign(new Error('Server has closed the connection.'), { code: 'P1017' })],
    [
      'a driver adapter error holding 57P01',
      Object.assign(new Error('postgres'), { name: 'DriverAdapterError', cause: { kind: 'postgres', originalCode: '57P01', code: '57P01' } }),
    ],
    ['a driver adapter error of kind ConnectionClosed', Object.assign(new Error('x'), { cause: { kind: 'ConnectionClosed' } })],
    [
      'Prisma meta.driverAdapterError',
      Object.assign(new Error('x'), { code: 'P2010', meta: { driverAdapterError: { cause: { kind: 'DatabaseNotReachable' } } } }),
    ],
    ['an UNAVAILABLE wrapping one', new Error('the history database is unreachable', { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) })],
  ])('recognises %s', (_name, error) => {
    expect(isDatabaseUnreachable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['Prisma P2002', Object.assign(new Error('Unique constraint failed'), { code: 'P2002' })],
    ['a serialization failure (retried, not an outage)', Object.assign(new Error('could not serialize access'), { code: '40001' })],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a string', 'ECONNREFUSED'],
    ['null', null],
  ])('does not take %s for an outage', (_name, error) => {
    expect(isDatabaseUnreachable(error)).toBe(false);
  });

  it('stops following a cycle of causes', () => {
    const a: { message: string; cause?: unknown } = { message: 'a' };
    a.cause = { message: 'b', cause: a };
    expect(isDatabaseUnreachable(a)).toBe(false);
  });
});

describe('databaseUnreachableMessage', () => {
  it.each([
    [
      'a refused connection',
      Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' }),
      'the database is unreachable (ECONNREFUSED)',
    ],
    [
      'a wrapped 57P01',
      new Error('wrapped', { cause: Object.assign(new Error('terminating connection'), { code: '57P01' }) }),
      'the database is unreachable (57P01)',
    ],
    [
      'Prisma P1001 naming its host',
      Object.assign(new Error("Can't reach database server at db.internal:5432"), { code: 'P1001' }),
      'the database is unreachable (P1001)',
    ],
    ['an adapter kind', { cause: { kind: 'ConnectionClosed' } }, 'the database is unreachable (ConnectionClosed)'],
    ['a message without a code', new Error('Connection terminated unexpectedly'), 'the database is unreachable'],
  ])('tells a client of %s by its code, never by the message', (_name, error, expected) => {
    expect(databaseUnreachableMessage(error)).toBe(expected);
  });
});
