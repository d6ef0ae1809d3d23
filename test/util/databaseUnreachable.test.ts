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
    ['a query the server did not answer within the pool’s query timeout', new Error('Query read timeout')],
    ['a wrapped 55000 with its connection-time message', { cause: { code: '55000', message: 'database "rp" is not currently accepting connections' } }],
    ['an UNAVAILABLE wrapping one', new Error('the history database is unreachable', { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) })],
    // PostgreSQL up but refusing rollplane's login (issue 17, F4): retry later, as for a server that is down.
    ['a role that may not log in (28000)', Object.assign(new Error('role "svc" is not permitted to log in'), { code: '28000', severity: 'FATAL' })],
    ['a rejected password (28P01)', Object.assign(new Error('password authentication failed for user "svc"'), { code: '28P01', severity: 'FATAL' })],
    ['a database that is gone (3D000)', Object.assign(new Error('database "rp" does not exist'), { code: '3D000', severity: 'FATAL' })],
    ['a database closed to connections (55000)', Object.assign(new Error('database "rp" is not currently accepting connections'), { code: '55000' })],
    ['a revoked CONNECT (42501)', Object.assign(new Error('permission denied for database "rp"'), { code: '42501' })],
  ])('recognises %s', (_name, error) => {
    expect(isDatabaseUnreachable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    // Prisma's shapes: no driver raises them since Prisma left the runtime (only pg does), so they are nobody's outage.
    ['Prisma P2002', Object.assign(new Error('Unique constraint failed'), { code: 'P2002' })],
    ['a Prisma P1001', Object.assign(new Error("Can't reach database server at 127.0.0.1:5432"), { code: 'P1001' })],
    ['a Prisma driver adapter error', Object.assign(new Error('x'), { meta: { driverAdapterError: { cause: { kind: 'DatabaseNotReachable' } } } })],
    ['a serialization failure (retried, not an outage)', Object.assign(new Error('could not serialize access'), { code: '40001' })],
    ['a prerequisite error of a query (55000)', Object.assign(new Error('currval of sequence "s" is not yet defined in this session'), { code: '55000' })],
    ['a missing table privilege (42501)', Object.assign(new Error('permission denied for table "Rollout"'), { code: '42501' })],
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
    ['a message without a code', new Error('Connection terminated unexpectedly'), 'the database is unreachable'],
    ['a role refused', Object.assign(new Error('role "svc" is not permitted to log in'), { code: '28000' }), 'the database is unreachable (28000)'],
    [
      'a database closed',
      Object.assign(new Error('database "rp" is not currently accepting connections'), { code: '55000' }),
      'the database is unreachable (55000)',
    ],
  ])('tells a client of %s by its code, never by the message', (_name, error, expected) => {
    expect(databaseUnreachableMessage(error)).toBe(expected);
  });
});
