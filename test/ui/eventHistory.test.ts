import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_SCAN_WINDOW } from '../../src/domain/historyPort.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seedEventHistory } from '../helpers/eventHistory.js';
import { ensureUiBuilt, launchChromium, openRestrictedPage, screenshot, type RestrictedPage } from './browser.js';

/**
 * The Events history over a long history with a filter that no index serves (a name alone): a page looks at 50,000
 * events at most (docs/adr/0036-bounded-event-reads.md), so it may show fewer rows than it could while there are more.
 * The page says how far it looked, and Next goes on from there.
 */
const HISTORY = 60_000;
let app: TestApp;
let browser: Browser;
let ui: RestrictedPage;
let needles: number[] = [];

beforeAll(async () => {
  ensureUiBuilt();
  app = await startTestApp();
  const first = seedEventHistory(app.databaseFile, HISTORY, [5, HISTORY - 1]);
  needles = [first + 5, first + HISTORY - 1];
  browser = await launchChromium();
  ui = await openRestrictedPage(browser, app.baseUrl);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('web UI event history', () => {
  it('pages a filter no index serves: a short page says how far it looked, and Next goes on from there', async () => {
    await ui.page.goto(`${app.baseUrl}/#/history`);
    await ui.page.getByRole('link', { name: 'Events' }).click();
    const rows = ui.page.locator('table[aria-label="Event history"] tbody tr[data-event-id]');
    await rows.first().waitFor();
    await ui.page.getByRole('search', { name: 'Filter events' }).getByRole('textbox', { name: 'Name', exact: true }).fill('needle');
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-event-id')))), { timeout: 15_000 }).toEqual([needles[0]]);
    const note = ui.page.getByRole('status').filter({ hasText: 'Looked at the events up to id' });
    await expect.poll(() => note.textContent()).toBe(`Looked at the events up to id ${5 * EVENT_SCAN_WINDOW}; Next → looks further.`);
    await screenshot(ui.page, 'events-short-page');
    const pager = ui.page.getByRole('navigation', { name: 'Events pages' });
    await pager.getByRole('button', { name: 'Next →' }).click();
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-event-id')))), { timeout: 15_000 }).toEqual([needles[1]]);
    expect(await note.count()).toBe(0);
    expect(await pager.getByRole('button', { name: 'Next →' }).isDisabled()).toBe(true);
    expect(ui.foreign).toEqual([]);
    expect(ui.errors.filter((e) => !e.includes('WebSocket'))).toEqual([]);
  });
});
