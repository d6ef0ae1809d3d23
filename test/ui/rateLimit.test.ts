import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedRollout, startTestApp, type TestApp } from '../helpers/app.js';
import { ensureUiBuilt, launchChromium } from './browser.js';

/** The web UI is one of rollplane's own clients: a 429 is waited out as its Retry-After says, never shown as a failure. */

let app: TestApp;
let browser: Browser;
let rolloutId: string;

beforeAll(async () => {
  ensureUiBuilt();
  app = await startTestApp();
  rolloutId = await seedRollout(app);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('the web UI under a rate limit', () => {
  it('retries a query the server answered 429 after Retry-After, and never shows it as an error', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    try {
      // Records, from the first paint, whether a "Could not load" error was ever on the page.
      await context.addInitScript(() => {
        const g = globalThis as unknown as {
          errorShown: boolean;
          MutationObserver: new (cb: () => void) => { observe(n: unknown, o: object): void };
          document: { documentElement: unknown; body?: { textContent: string } };
        };
        g.errorShown = false;
        new g.MutationObserver(() => {
          if (g.document.body?.textContent.includes('Could not load')) g.errorShown = true;
        }).observe(g.document.documentElement, { subtree: true, childList: true, characterData: true });
      });
      const answered: number[] = [];
      await context.route('**/graphql', async (route) => {
        const body = route.request().postData() ?? '';
        if (route.request().method() !== 'POST' || !body.includes('query RolloutDetail')) return route.continue();
        // The first two: the page may ask twice (a live update of the rollout reloads it), and each must be waited out.
        answered.push(answered.length < 2 ? 429 : 200);
        if (answered.length <= 2) {
          return route.fulfill({
            status: 429,
            headers: { 'content-type': 'application/json', 'retry-after': '0' },
            body: JSON.stringify({ errors: [{ message: 'too many queries; retry in 0s', extensions: { code: 'RATE_LIMITED', retryAfterSeconds: 0 } }] }),
          });
        }
        return route.continue();
      });
      const page = await context.newPage();
      await page.goto(`${app.baseUrl}/#/rollouts/${rolloutId}`);
      await page.locator('.facts').waitFor({ timeout: 15_000 });
      expect(answered.slice(0, 3)).toEqual([429, 429, 200]);
      expect(await page.evaluate(() => (globalThis as unknown as { errorShown: boolean }).errorShown)).toBe(false);
    } finally {
      await context.close();
    }
  });
});
