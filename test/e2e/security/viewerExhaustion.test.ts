/**
 * Issue 34, findings 1 and 2: a viewer token must neither crash nor stall the service. Both run against the service
 * as a process of its own under the Deployment's heap cap (deploy/40-deployment.yaml: --max-old-space-size=512), with
 * authentication on, as the attacker ran them.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../../src/domain/events.js';
import { startTestApp } from '../../helpers/app.js';
import { killIfRunning, startService, type ServiceProcess } from '../../helpers/child.js';
import WebSocket from 'ws';
import { gql } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';
import { percentile, underAttack } from './probes.js';

const ADMIN = 'admin-secret-for-viewer-exhaustion-0123456789';
/** The attacker's history: 3,300 events. */
const HISTORY = 3_300;
const HEAP_CAP = '--max-old-space-size=512 --max-semi-space-size=16';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-exhaustion-'));
const databaseFile = path.join(dir, 'rollplane.db');
let service: ServiceProcess | undefined;
let viewer = '';

function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

beforeAll(async () => {
  // The history the replays read, written before the service starts.
  const seed = await startTestApp({ databaseFile, env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN } });
  for (let i = 0; i < HISTORY; i += 100) {
    await seed.domain.events.append(
      ...Array.from({ length: 100 }, (_, j) => ({
        type: EventType.RolloutStateChanged,
        rolloutId: `ro_seed${i + j}`,
        kind: 'AGENT_POOL' as const,
        payload: { from: 'PENDING' as const, to: 'PROGRESSING' as const, message: `seeded event ${i + j} of the attacker's history` },
      })),
    );
  }
  viewer = (await seed.domain.tokens.create({ name: 'viewer', role: 'viewer' })).secret;
  // The caller's own file: close() keeps it.
  await seed.close();
  service = await startService({
    DATABASE_URL: `file:${databaseFile}`,
    ROLLPLANE_AUTH: 'on',
    ROLLPLANE_ADMIN_TOKEN: ADMIN,
    NODE_OPTIONS: HEAP_CAP,
    LOG_LEVEL: 'error',
  });
}, 120_000);

afterAll(async () => {
  await killIfRunning(service);
  rmSync(dir, { recursive: true, force: true });
});

describe('a viewer', () => {
  it('(finding 1) cannot grow the heap with distinct documents padded with large comments: RSS stays flat over 2,000 of them', async () => {
    const { url, child } = service!;
    const pad = `#${'x'.repeat(250_000)}\n`;
    const send = (i: number) => gql(url, `# ${i}\n${pad}{ serverInfo { version } }`, {}, { authorization: `Bearer ${viewer}` });
    let warm = 0;
    // Four at a time, as fast as the service answers.
    for (let i = 0; i < 2_000; i += 4) {
      const answers = await Promise.all([send(i), send(i + 1), send(i + 2), send(i + 3)]);
      for (const answer of answers) expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
      if (i === 200) warm = rssMiB(child.pid!);
    }
    const after = rssMiB(child.pid!);
    // Before the fix: +400 MB by 1,600 documents, then out of memory (exit 134) near 1,700.
    expect(child.exitCode).toBeNull();
    expect(after - warm, `RSS ${warm.toFixed(0)} MiB after 200 documents, ${after.toFixed(0)} MiB after 2,000`).toBeLessThan(64);
  }, 300_000);

  it("(attack 11, F1) cannot hold the heap with open subscriptions: 800 of 250 KB each are refused past the token's budget, RSS bounded", async () => {
    const { url, child } = service!;
    const before = rssMiB(child.pid!);
    const pad = 'x'.repeat(250_000);
    const refusals: string[] = [];
    let accepted = 0;
    const sockets: WebSocket[] = [];
    for (let s = 0; s < 8; s++) {
      const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
      sockets.push(socket);
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${viewer}` } })));
        socket.once('message', () => resolve());
      });
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as { type: string; payload?: { extensions?: { code?: string } }[] };
        if (message.type === 'error') refusals.push(message.payload?.[0]?.extensions?.code ?? 'none');
      });
      for (let i = 0; i < 100; i++) {
        socket.send(JSON.stringify({ id: `s${i}`, type: 'subscribe', payload: { query: `# ${s}-${i}\n#${pad}\nsubscription { events { id type } }` } }));
      }
    }
    // Every refusal is an error message; the accepted ones stay open and silent. Wait until all 800 are decided.
    await until(
      'every subscription accepted or refused',
      async () => {
        const metrics = await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text();
        accepted = Number(/rollplane_subscriptions_active (\d+)/.exec(metrics)?.[1] ?? 0);
        return accepted + refusals.length >= 800;
      },
      { timeoutMs: 120_000 },
    );
    const after = rssMiB(child.pid!);
    for (const socket of sockets) socket.terminate();
    expect(child.exitCode).toBeNull();
    expect(new Set(refusals)).toEqual(new Set(['RATE_LIMITED']));
    // 32 MiB counted per token, about 1 MiB counted per subscription here.
    expect(accepted).toBeGreaterThan(10);
    expect(accepted).toBeLessThan(40);
    // Before the fix the process died (heap limit, RSS 724 MB).
    expect(after - before, `RSS ${before.toFixed(0)} → ${after.toFixed(0)} MiB with ${accepted} open`).toBeLessThan(200);
  }, 300_000);

  it('(finding 2) cannot stall the process with replays: /healthz keeps answering while 100 replays of the whole history loop', async () => {
    const { url } = service!;
    const baseUrl = url.replace(/\/graphql$/, '');
    // A probe of each every 25 ms, 300 of them: the attack runs for as long as they take.
    // ...and until the attacker has read more than the whole history once, by replays and pages together (its budget
    // paces both, and its own loop of refused pages can leave its replays waiting: CI saw them stop at 3,000).
    const receivedMoreThanHistory = (output: string) =>
      [...output.matchAll(/^received (\d+) pages (\d+)$/gm)].some((m) => Number(m[1]) + 1000 * Number(m[2]) > HISTORY);
    const {
      healthz: h,
      control: c,
      figures,
      report,
    } = await underAttack('replayFlood.ts', [url, viewer, String(HISTORY)], `${baseUrl}/healthz`, receivedMoreThanHistory);
    console.log(`/healthz under attack: ${figures}`);
    console.log(`attacker: ${report}`);
    // Beyond what the machine's load costs any process (the control's): the aim is 100 ms, and the Deployment's
    // liveness probe gives up after 1 s (before the fix: 11.6 s, then out of memory).
    expect(percentile(h, 90) - percentile(c, 90), figures).toBeLessThan(100);
    expect(percentile(h, 99) - percentile(c, 99), figures).toBeLessThan(1_000);
    const stats = JSON.parse(report || '{}') as { replays?: number; received?: number; pages?: number };
    // The attack ran: events were replayed and paged to it (paced by its budget, not refused).
    expect(stats.received ?? 0).toBeGreaterThan(0);
    expect((stats.received ?? 0) + 1000 * (stats.pages ?? 0)).toBeGreaterThan(HISTORY);
  }, 300_000);
});
