import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { compose } from '../../src/start/compose.js';

const silent = pino({ level: 'silent' });

describe('compose (the one unwind)', () => {
  it('stops what started in reverse order when a later part throws, then rethrows', async () => {
    const stopped: string[] = [];
    const part = (name: string) => ({ stop: async () => void stopped.push(name) });
    await expect(
      compose(silent, async (started) => {
        started(part('history'));
        started(part('kubernetes'));
        throw new Error('the API cannot listen');
      }),
    ).rejects.toThrow('the API cannot listen');
    expect(stopped).toEqual(['kubernetes', 'history']);
  });

  it('stops every part once however often stop is called, and a part failing to stop does not keep the others running', async () => {
    const stopped: string[] = [];
    const composed = await compose(silent, async (started) => {
      started(async () => void stopped.push('first'));
      started(async () => {
        throw new Error('cannot stop');
      });
      started(async () => void stopped.push('last'));
      return { answer: 42 };
    });
    expect(composed.answer).toBe(42);
    await Promise.all([composed.stop(), composed.stop()]);
    await composed.stop();
    expect(stopped).toEqual(['last', 'first']);
  });
});

/** Log lines as objects, to learn where the simulator listened. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

function refused(url: string): Promise<boolean> {
  return fetch(url).then(
    () => false,
    (error: Error & { cause?: { code?: string } }) => error.cause?.code === 'ECONNREFUSED',
  );
}

describe('startApp when a later starter fails', () => {
  let dir: string;
  let blocker: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (blocker ? blocker.close(() => resolve()) : resolve()));
    blocker = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops the history and the simulator when the port is already in use', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-unwind-'));
    blocker = createServer();
    const port = await new Promise<number>((resolve) => blocker!.listen(0, '127.0.0.1', () => resolve((blocker!.address() as { port: number }).port)));
    const databaseFile = path.join(dir, 'rollplane.db');
    const config = loadConfig(
      { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `file:${databaseFile}`, ROLLPLANE_KUBE: 'sim', ROLLPLANE_SIM_FLEET: 'empty' },
      [],
    );
    const { logger, lines } = capturingLogger();

    await expect(startApp(config, { logger })).rejects.toMatchObject({ code: 'EADDRINUSE' });

    // The simulator (started by the Kubernetes starter) no longer answers...
    const sim = lines.find((l) => l.msg === 'embedded Kubernetes simulator started');
    expect(sim?.url, 'the simulator started before the API failed').toEqual(expect.stringMatching(/^https?:\/\//));
    expect(await refused(`${sim!.url}/version`)).toBe(true);
    // ...and the database (the first starter) was closed: the last SQLite connection in WAL mode removes its -wal file.
    expect(existsSync(databaseFile)).toBe(true);
    expect(existsSync(`${databaseFile}-wal`)).toBe(false);
    expect(lines.filter((l) => l.msg === 'error during shutdown')).toEqual([]);
  });

  it('closes the history when the Kubernetes API given by a kubeconfig does not answer', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-unwind-'));
    // A port that was free a moment ago: nothing listens there.
    blocker = createServer();
    const port = await new Promise<number>((resolve) => blocker!.listen(0, '127.0.0.1', () => resolve((blocker!.address() as { port: number }).port)));
    await new Promise<void>((resolve) => blocker!.close(() => resolve()));
    blocker = undefined;
    const kubeconfig = path.join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: c, cluster: { server: "http://127.0.0.1:' + port + '" } }]',
        'users: [{ name: u, user: { token: t } }]',
        'contexts: [{ name: x, context: { cluster: c, user: u } }]',
        'current-context: x',
      ].join('\n'),
    );
    const databaseFile = path.join(dir, 'rollplane.db');
    const config = loadConfig(
      { PORT: '0', DATABASE_URL: `file:${databaseFile}`, ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: kubeconfig, LOG_LEVEL: 'silent' },
      [],
    );

    await expect(startApp(config, { logger: silent })).rejects.toThrow(/Kubernetes API/);
    expect(existsSync(databaseFile)).toBe(true);
    expect(existsSync(`${databaseFile}-wal`)).toBe(false);
  });
});
