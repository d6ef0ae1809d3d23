import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { defaultStrategy } from '../../src/domain/kinds/index.js';
import type { PrismaClient } from '../../src/store/generated/client.js';
import { openTestPrisma } from './prisma.js';

export interface TestApp extends App {
  /** The SQLite file; reuse it with `startTestApp({ databaseFile })` to test a restart. */
  databaseFile: string;
  /** Prisma on that file, for what the API does not offer (helpers/prisma.ts). */
  prisma: PrismaClient;
  baseUrl: string;
  /** Stops the app and deletes its temporary directory (unless the caller passed its own database file). */
  close(): Promise<void>;
}

export interface TestAppOptions {
  databaseFile?: string;
  env?: Record<string, string>;
}

/**
 * Starts the real server on port 0 with a fresh SQLite file and the simulator (empty fleet unless told). Controllers
 * are off unless `env.ROLLPLANE_CONTROLLERS` is `on`, so API tests can seed rollouts the engine would otherwise act on.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const dir = options.databaseFile ? undefined : mkdtempSync(path.join(os.tmpdir(), 'rollplane-test-'));
  const databaseFile = options.databaseFile ?? path.join(dir!, 'rollplane.db');
  const config = loadConfig(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `file:${databaseFile}`,
      LOG_LEVEL: 'silent',
      ROLLPLANE_KUBE: 'sim',
      ROLLPLANE_SIM_FLEET: 'empty',
      // `local` alone, whatever the fleet: a test that wants the simulated members asks for them.
      ROLLPLANE_SIM_MEMBER_CLUSTERS: 'off',
      ROLLPLANE_CONTROLLERS: 'off',
      ...options.env,
    },
    [],
  );
  const app = await startApp(config, { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) });
  const prisma = await openTestPrisma(databaseFile);
  return {
    ...app,
    databaseFile,
    prisma,
    baseUrl: app.url.replace(/\/graphql$/, ''),
    async close() {
      await prisma.$disconnect();
      await app.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Seeds one agent-pool rollout (a:1 → a:2 on pool default/p) straight through the domain, for API tests that need a
 * rollout to read, page or act on; the controllers are off (startTestApp), so nothing moves it on.
 */
export async function seedRollout(app: App, cause: Record<string, unknown> = {}): Promise<string> {
  const { rollout } = await app.domain.rollouts.create({
    kind: 'AGENT_POOL',
    fromVersion: 'a:1',
    toVersion: 'a:2',
    selector: {},
    strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
    cause,
    targets: [{ namespace: 'default', name: 'p', fromVersion: 'a:1', toVersion: 'a:2' }],
  });
  return rollout.id;
}
