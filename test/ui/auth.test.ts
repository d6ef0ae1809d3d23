import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedRollout, startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
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
  it('asks for a token first (no empty views that say there is nothing), then works over HTTP and WebSocket once one is entered', async () => {
    await ui.page.goto(`${app.baseUrl}/`);
    await ui.page.locator('#sign-in-title').waitFor({ timeout: 15_000 });
    expect(await ui.page.locator('#main').textContent()).toContain('This rollplane server requires an API token');
    expect(await ui.page.locator('#rollouts-title').count()).toBe(0);
    expect(await ui.page.getByText('No rollouts yet').count()).toBe(0);

    await ui.page.locator('#main input[type="password"]').fill(TOKEN);
    await ui.page.getByRole('button', { name: 'Sign in' }).click();

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
      payload: { pool: 'default/token-probe', oldImage: 'x/agent:v1', newImage: 'x/agent:v2', reason: 'drift', seconds: 1 },
    });
    await ui.page.locator(`tr[data-event-id="${event!.id}"]`).waitFor({ timeout: 15_000 });
    expect(ui.foreign).toEqual([]);
  });

  it('says a saved token was refused and asks for another', async () => {
    await ui.page.evaluate(() =>
      (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem(
        'rollplane.apiToken',
        'rp_revoked-or-unknown-token-000000000000',
      ),
    );
    await ui.page.goto(`${app.baseUrl}/#/fleet`);
    await ui.page.reload();
    await ui.page.locator('#sign-in-title').waitFor({ timeout: 15_000 });
    expect(await ui.page.locator('#main').textContent()).toContain('The server refused the saved token');
    expect(await ui.page.locator('#agent-pools-title').count()).toBe(0);
  });

  it("offers only the actions the caller's role allows: none to a viewer, and says who is signed in", async () => {
    const rolloutId = await seedRollout(app);
    const created = await gql(
      app.url,
      'mutation { createApiToken(input: { name: "wallboard", role: viewer }) { secret } }',
      {},
      { authorization: `Bearer ${TOKEN}` },
    );
    const setToken = (token: string) =>
      ui.page.evaluate(
        (t) => (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem('rollplane.apiToken', t),
        token,
      );

    await setToken(TOKEN);
    await ui.page.goto(`${app.baseUrl}/#/rollouts/${rolloutId}`);
    await ui.page.reload();
    await ui.page.getByRole('button', { name: `Pause rollout ${rolloutId}` }).waitFor({ timeout: 15_000 });
    expect(await ui.page.locator('.topbar .server').textContent()).toContain('admin (admin)');

    await setToken(created.data.createApiToken.secret);
    await ui.page.reload();
    await ui.page.locator('.facts').waitFor({ timeout: 15_000 });
    await expect.poll(() => ui.page.locator('.topbar .server').textContent()).toContain('wallboard (viewer)');
    expect(await ui.page.locator('.actions button').count()).toBe(0);
  });
});
