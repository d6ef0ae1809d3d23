import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewEvent } from '../../src/domain/events.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ensureUiBuilt, launchChromium, openRestrictedPage, type RestrictedPage } from './browser.js';

let first: TestApp;
let second: TestApp | undefined;
let browser: Browser;
let ui: RestrictedPage;

const recreation = (name: string): NewEvent => ({
  type: 'AgentRecreated',
  kind: 'AGENT_POOL',
  namespace: 'restart',
  name,
  payload: { pool: `restart/${name}`, oldImage: 'x/agent:v1', newImage: 'x/agent:v2', reason: 'drift', seconds: 1, readyAt: new Date().toISOString() },
});

beforeAll(async () => {
  ensureUiBuilt();
  first = await startTestApp();
  browser = await launchChromium();
  ui = await openRestrictedPage(browser, first.baseUrl);
});

afterAll(async () => {
  await browser?.close();
  await second?.close();
  await first?.close();
});

describe('live feed across a server restart', () => {
  it('picks up after the server comes back on the same address, with every row exactly once', async () => {
    const before = await first.domain.events.append(recreation('before-1'), recreation('before-2'));
    await ui.page.goto(`${first.baseUrl}/`);
    for (const event of before) await ui.page.locator(`tr[data-event-id="${event.id}"]`).waitFor({ timeout: 15_000 });

    await first.stop();
    await ui.page.locator('[data-connection="reconnecting"]').waitFor({ timeout: 15_000 });
    second = await startTestApp({ databaseFile: first.databaseFile, env: { PORT: String(first.port) } });
    const after = await second.domain.events.append(recreation('after-1'), recreation('after-2'));

    for (const event of after) await ui.page.locator(`tr[data-event-id="${event.id}"]`).waitFor({ timeout: 30_000 });
    await ui.page.locator('[data-connection="live"]').waitFor();
    const ids = await ui.page.locator('table.feed tr[data-event-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')));
    expect(ids).toEqual([...after, ...before].map((e) => String(e.id)).sort((a, b) => Number(b) - Number(a)));
    expect(ui.foreign).toEqual([]);
  });
});
