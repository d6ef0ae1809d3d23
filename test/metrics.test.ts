import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';

const docs = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../docs/metrics.md'), 'utf8');

/** docs/metrics.md lists every series the service exports (beside Node.js's defaults), so operators can find them. */
describe('the metrics page', () => {
  let app: TestApp;
  beforeAll(async () => {
    // Controllers on, so that the kinds' and the work queues' series are registered too.
    app = await startTestApp({ env: { ROLLPLANE_CONTROLLERS: 'on', ROLLPLANE_SIM_FLEET: 'pools=2,nodes=2,clusters=1' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('documents every rollplane_* and workqueue_* series /metrics exports', async () => {
    const text = await (await fetch(`${app.baseUrl}/metrics`)).text();
    const exported = [...text.matchAll(/^# HELP ((?:rollplane|workqueue)_\w+) /gm)].map((m) => m[1]!);
    expect(exported.length).toBeGreaterThan(20);
    expect(exported.filter((name) => !docs.includes(`\`${name}\``))).toEqual([]);
  });
});
