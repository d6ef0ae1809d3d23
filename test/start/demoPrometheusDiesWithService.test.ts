import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { killIfRunning, type ServiceProcess, startService } from '../helpers/child.js';
import { describeWithPrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

/**
 * The analysis demo's Prometheus (`ROLLPLANE_SIM_PROMETHEUS=on`) ends with the service however the service ends: a
 * SIGKILLed service runs none of its cleanup, and its Prometheus was left running (ppid 1), holding its port, one more
 * after every crash (attack 19, F13).
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane demo prometheus kill '));
let service: ServiceProcess | undefined;
afterAll(async () => {
  await killIfRunning(service);
  rmSync(dir, { recursive: true, force: true });
});

/** The pid of the Prometheus listening on `port`, from /proc (its command line names the address). */
function prometheusOn(port: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.some((a) => a.endsWith('prometheus')) && args.includes(`--web.listen-address=127.0.0.1:${port}`)) return Number(entry);
    } catch {}
  }
  return undefined;
}

/** Whether `pid` is gone (or a zombie nobody reaped yet: it runs no more and holds no port). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describeWithPrometheus('ROLLPLANE_SIM_PROMETHEUS=on: a SIGKILLed service', () => {
  it('takes its Prometheus with it: the process exits and its port is free', async () => {
    service = await startService({
      DATABASE_URL: `file:${path.join(dir, 'rollplane.db')}`,
      ROLLPLANE_SIM_FLEET: 'pools=1',
      ROLLPLANE_SIM_PROMETHEUS: 'on',
      LOG_LEVEL: 'info',
    });
    const started = await until('the demo Prometheus started', () => {
      const line = service!
        .stdout()
        .split('\n')
        .find((l) => l.includes('demo Prometheus started'));
      return line ? (JSON.parse(line) as { url: string }).url : undefined;
    });
    const port = Number(new URL(started).port);
    const pid = prometheusOn(port);
    expect(pid, `a Prometheus on port ${port}`).toBeDefined();
    expect(await accepts(port)).toBe(true);

    service.child.kill('SIGKILL');
    await service.exited;
    await until(`Prometheus (pid ${pid}) gone after the service's SIGKILL`, () => gone(pid!));
    await until(`port ${port} free`, async () => !(await accepts(port)));
  });
});
