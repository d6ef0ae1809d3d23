import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ensureUiBuilt, launchChromium, openRestrictedPage, type RestrictedPage } from './browser.js';

const TOKEN = 'ui-test-admin-token-0123456789abcdefghijkl';

let app: TestApp;
let browser: Browser;
let ui: RestrictedPage;

beforeAll(async () => {
  ensureUiBuilt();
  app = await startTestApp({ env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: TOKEN } });
  browser = await launchChromium();
  ui = await openRestrictedPage(browser, app.baseUrl);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('web UI on a server that requires API tokens', () => {
  it('says a token is needed, then works over HTTP and WebSocket once one is entered', async () => {
    await ui.page.goto(`${app.baseUrl}/`);
    await ui.page.locator('.banner.error', { hasText: 'requires an API token' }).waitFor({ timeout: 15_000 });

    await ui.page.getByRole('button', { name: 'API token' }).click();
    await ui.page.getByLabel('API token').fill(TOKEN);
    await ui.page.getByRole('button', { name: 'Save' }).click();

    await ui.page.locator('[data-connection="live"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => ui.page.locator('#rollouts-title').textContent(), { timeout: 10_000 }).toMatch(/Rollouts · 0 active/);
    expect(await ui.page.locator('.banner.error').count()).toBe(0);
    await ui.page.getByRole('button', { name: 'API token ✓' }).waitFor();

    // The live feed is authenticated too: an event appended now arrives over the WebSocket.
    const [event] = await app.domain.events.append({
      type: 'AgentRecreated',
      kind: 'AGENT_POOL',
      namespace: 'default',
      name: 'token-probe',
      payload: { oldImage: 'x/agent:v1', newImage: 'x/agent:v2', reason: 'drift', seconds: 1 },
    });
    await ui.page.locator(`tr[data-event-id="${event!.id}"]`).waitFor({ timeout: 15_000 });
    expect(ui.foreign).toEqual([]);
  });
});
