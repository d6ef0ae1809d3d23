import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ensureUiBuilt, launchChromium, openRestrictedPage, screenshot, type RestrictedPage } from './browser.js';

let app: TestApp;
let browser: Browser;
let ui: RestrictedPage;

beforeAll(async () => {
  ensureUiBuilt();
  app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=1000,clusters=20,nodes=10' } });
  browser = await launchChromium();
  ui = await openRestrictedPage(browser, app.baseUrl);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('web UI at 1,000 pools', () => {
  it('pages the agent pools 50 at a time instead of rendering them all', async () => {
    const started = Date.now();
    await ui.page.goto(`${app.baseUrl}/#/fleet`);
    await expect.poll(() => ui.page.locator('#agent-pools-title').textContent(), { timeout: 30_000 }).toBe('Agent pools · 1000');
    const rows = ui.page.locator('table[aria-label="Agent pools"] tbody tr[data-pool]');
    await expect.poll(() => rows.count()).toBe(50);
    console.info(`fleet view with 1000 pools: first page shown ${Date.now() - started} ms after navigation`);
    const firstPage = await rows.first().getAttribute('data-pool');

    const pager = ui.page.getByRole('navigation', { name: 'Agent pools pages' });
    await pager.getByRole('button', { name: 'Next →' }).click();
    await expect.poll(() => pager.textContent()).toContain('Page 2');
    await expect.poll(() => rows.first().getAttribute('data-pool')).not.toBe(firstPage);
    expect(await rows.count()).toBe(50);
    await pager.getByRole('button', { name: '← Previous' }).click();
    await expect.poll(() => rows.first().getAttribute('data-pool')).toBe(firstPage);
    await screenshot(ui.page, 'fleet-1000-pools');
    expect(ui.foreign).toEqual([]);
    expect(ui.errors).toEqual([]);
  });
});
