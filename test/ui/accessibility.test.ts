import type { Browser, Page } from 'playwright-core';
import { inspect } from './axe.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { ensureUiBuilt, graphql, launchChromium, screenshot } from './browser.js';

/**
 * Every page of the web UI and the GraphQL playground, on a phone (390 px) and a desktop (1440 px) in Chromium:
 * axe-core finds no serious or critical violation, each page has one <h1>, nothing is wider than the window and no
 * panel is wider than itself (wide tables scroll inside focusable regions). Screenshots go to test-artifacts/.
 */

const WIDTHS = [390, 1440] as const;

let app: TestApp;
let browser: Browser;
let abortedId: string;

async function mutate<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const result = await graphql<T>(app.baseUrl, query, variables);
  expect(result.errors).toBeUndefined();
  return result.data!;
}

beforeAll(async () => {
  ensureUiBuilt();
  app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'demo', ROLLPLANE_CONTROLLERS: 'on', ROLLPLANE_LEADER_ELECT: 'false' } });
  // History with a rollout that succeeded and one stopped halfway (aborted after its canary), so that every kind of
  // row, badge and progress bar is on the pages.
  const done = await mutate<{ bumpAgentImage: { rollout: { id: string } } }>(
    'mutation { bumpAgentImage(input: {image: "rancher/harvester-vm-dhcp-agent:v0.3.1", strategy: {maxUnavailable: "3"}}) { rollout { id } } }',
  );
  await until(
    'the first rollout to succeed',
    async () =>
      (await graphql<{ rollout: { state: string } }>(app.baseUrl, `{ rollout(id: "${done.bumpAgentImage.rollout.id}") { state } }`)).data?.rollout.state ===
      'SUCCEEDED',
    60_000,
  );
  const canary = await mutate<{ bumpAgentImage: { rollout: { id: string } } }>(
    'mutation { bumpAgentImage(input: {image: "rancher/harvester-vm-dhcp-agent:v0.3.2", strategy: {maxUnavailable: "1", canary: 1}}) { rollout { id } } }',
  );
  abortedId = canary.bumpAgentImage.rollout.id;
  await until(
    'the canary to pause',
    async () => (await graphql<{ rollout: { state: string } }>(app.baseUrl, `{ rollout(id: "${abortedId}") { state } }`)).data?.rollout.state === 'PAUSED',
    60_000,
  );
  await mutate(`mutation { abortRollout(id: "${abortedId}", reason: "a11y test") { state } }`);
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const PAGES: { name: string; path: () => string; ready: (page: Page) => Promise<unknown> }[] = [
  { name: 'dashboard', path: () => '/', ready: (page) => page.locator('[data-connection="live"]').waitFor() },
  { name: 'fleet', path: () => '/#/fleet', ready: (page) => page.locator('tr[data-pool]').first().waitFor() },
  { name: 'clusters', path: () => '/#/clusters', ready: (page) => page.locator('tr[data-cluster="local"]').waitFor() },
  { name: 'charts', path: () => '/#/charts', ready: (page) => page.locator('#main h2').first().waitFor() },
  { name: 'history', path: () => '/#/history', ready: (page) => page.locator('tr[data-rollout-id]').nth(1).waitFor() },
  { name: 'history-events', path: () => '/#/history/events', ready: (page) => page.locator('table.events tbody tr').first().waitFor() },
  { name: 'rollout', path: () => `/#/rollouts/${abortedId}`, ready: (page) => page.locator('tr[data-target]').first().waitFor() },
  { name: 'notifications', path: () => '/#/notifications', ready: (page) => page.getByRole('table', { name: 'Notification subscriptions' }).waitFor() },
  { name: 'playground', path: () => '/graphql', ready: (page) => page.locator('.graphiql-container').waitFor() },
];

describe('every page on a phone and a desktop', () => {
  for (const width of WIDTHS) {
    for (const target of PAGES) {
      it(`${target.name} at ${width} px: no serious axe violation, one <h1>, nothing wider than the window or its panel`, async () => {
        const context = await browser.newContext({ viewport: { width, height: 900 }, deviceScaleFactor: 1 });
        try {
          const page = await context.newPage();
          await page.goto(`${app.baseUrl}${target.path()}`, target.name === 'playground' ? { waitUntil: 'load' } : {});
          await target.ready(page);
          const findings = await inspect(page);
          await screenshot(page, `a11y-${target.name}-${width}`);
          expect(findings.violations).toEqual([]);
          expect(findings.h1).toBe(1);
          expect(findings.overflow).toEqual([]);
        } finally {
          await context.close();
        }
      });
    }
  }
});

/** WCAG contrast ratio of two `rgb(…)` colours. */
function contrast(a: string, b: string): number {
  const luminance = (rgb: string) => {
    const [r, g, bl] = rgb
      .match(/\d+(\.\d+)?/g)!
      .slice(0, 3)
      .map((c) => {
        const v = Number(c) / 255;
        return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
      });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

describe('what the pages say', () => {
  it('a stopped rollout reads what succeeded, never 100 %; a destructive confirmation stays readable while hovered', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${app.baseUrl}/#/rollouts/${abortedId}`);
      const bar = page.locator('#main [role="progressbar"]').first();
      await bar.waitFor();
      expect(await bar.getAttribute('aria-valuetext')).toMatch(/^aborted: 1\/3 succeeded/);
      expect(await page.locator('#main .progress-text').first().textContent()).toMatch(/^aborted · 1\/3 succeeded · 2 cancelled$/);
      // Duration, and settings instead of raw JSON.
      await expect.poll(() => page.locator('.facts').textContent()).toMatch(/Duration\d+ s/);
      expect(await page.locator('.facts').textContent()).not.toContain('{"');

      const rollback = page.getByRole('button', { name: `Rollback rollout ${abortedId}` });
      await rollback.click();
      const confirm = page.getByRole('button', { name: `Confirm rollback of rollout ${abortedId}` });
      await confirm.hover();
      const colours = await confirm.evaluate((button) => {
        const style = (globalThis as unknown as { getComputedStyle(element: unknown): { color: string; backgroundColor: string } }).getComputedStyle(button);
        return { color: style.color, background: style.backgroundColor };
      });
      expect(contrast(colours.color, colours.background)).toBeGreaterThanOrEqual(4.5);
    } finally {
      await context.close();
    }
  });
});
