import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { type ReadinessCheck, writeReadiness } from '../../src/http/health.js';
import { checkDiskSpace, LOW_DISK_BYTES } from '../../src/store/diskSpace.js';

async function readiness(checks: ReadinessCheck[]): Promise<{ status: number; body: any }> {
  const server = createServer((_, res) => void writeReadiness(res, checks, false));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`);
    return { status: res.status, body: await res.json() };
  } finally {
    server.close();
  }
}

const failing = (name: string, message: string, advisory?: boolean): ReadinessCheck => ({
  name,
  check: async () => {
    throw new Error(message);
  },
  ...(advisory ? { advisory } : {}),
});

describe('/readyz', () => {
  it('stays ready when only an advisory check fails, and lists it under warnings', async () => {
    const { status, body } = await readiness([{ name: 'database', check: async () => undefined }, failing('disk', 'the volume is nearly full', true)]);
    expect(status).toBe(200);
    expect(body).toEqual({ status: 'ready', checks: [{ name: 'database', ok: true }], warnings: [{ name: 'disk', warning: 'the volume is nearly full' }] });
  });

  it('is not ready when a check fails, warnings or not', async () => {
    const { status, body } = await readiness([failing('database', 'closed'), { name: 'disk', advisory: true, check: async () => undefined }]);
    expect(status).toBe(503);
    expect(body).toEqual({ status: 'not ready', checks: [{ name: 'database', ok: false, error: 'closed' }] });
  });
});

describe('the disk warning (issue 34, finding 9)', () => {
  const GiB = 1024 ** 3;
  it('warns below 10% of the volume or 256 MiB, whichever is larger, saying what to do', () => {
    expect(() => checkDiskSpace({ freeBytes: 0.5 * GiB, totalBytes: 2 * GiB }, '/data/rollplane.db')).not.toThrow();
    expect(() => checkDiskSpace({ freeBytes: LOW_DISK_BYTES - 1, totalBytes: 2 * GiB }, '/data/rollplane.db')).toThrow(
      /rollplane\.db has 255 MiB free of 2048 MiB: grow it, or lower ROLLPLANE_AUDIT_MAX_ENTRIES/,
    );
    expect(() => checkDiskSpace({ freeBytes: 9 * GiB, totalBytes: 100 * GiB }, '/data/rollplane.db')).toThrow(/9216 MiB free/);
  });
});
