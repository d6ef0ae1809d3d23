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

  it('replays thousands of events into the feed and the charts, keeping the newest 500 feed rows', async () => {
    const recreations = 5_000;
    const observations = 2_000;
    for (let i = 0; i < recreations; i += 500) {
      await app.domain.events.append(
        ...Array.from({ length: 500 }, (_, j) => ({
          type: 'AgentRecreated' as const,
          kind: 'AGENT_POOL' as const,
          namespace: 'default',
          name: `net-${((i + j) % 1000) + 1}`,
          payload: {
            pool: `default/net-${((i + j) % 1000) + 1}`,
            oldImage: 'x/agent:v1',
            newImage: 'x/agent:v2',
            reason: 'drift',
            seconds: 1 + ((i + j) % 7),
            readyAt: new Date().toISOString(),
          },
        })),
      );
    }
    for (let i = 0; i < observations; i += 500) {
      await app.domain.events.append(
        ...Array.from({ length: 500 }, (_, j) => ({
          type: 'ClusterUpgradeObserved' as const,
          kind: 'VIRTUAL_CLUSTER' as const,
          namespace: 'tenants',
          name: `vc-${(i + j) % 20}`,
          payload: {
            cluster: `tenants/vc-${(i + j) % 20}`,
            clusterVersion: `cv-${(i + j) % 3}`,
            resourceVersion: '1',
            specVersion: '1',
            seconds: 10 + ((i + j) % 50),
            outcome: 'SUCCEEDED' as const,
            components: [],
            error: null,
          },
        })),
      );
    }
    const started = Date.now();
    await ui.page.goto(`${app.baseUrl}/#/charts`);
    await ui.page.reload();
    const counts = ui.page.locator('table[aria-label="Upgrade durations per cluster version"] .observation-count');
    await expect
      .poll(async () => (await counts.allTextContents()).reduce((sum, n) => sum + Number(n), 0), { timeout: 60_000, interval: 250 })
      .toBe(observations);
    await ui.page.getByText(`${recreations} recreations`, { exact: false }).waitFor({ timeout: 60_000 });
    console.info(`replayed ${recreations} agent recreations and ${observations} upgrade observations into the charts in ${Date.now() - started} ms`);
    await screenshot(ui.page, 'charts-replay');

    await ui.page.getByRole('link', { name: 'Rollouts & feed' }).click();
    await expect.poll(() => ui.page.locator('table.feed tbody tr[data-event-id]').count()).toBe(50);
    await expect.poll(() => ui.page.locator('#feed-title >> xpath=ancestor::section').getByText('(newest 500 kept)').count()).toBe(1);
    expect(ui.errors).toEqual([]);
  });
});
