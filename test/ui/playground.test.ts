import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ensureUiBuilt, launchChromium, openRestrictedPage, screenshot, type RestrictedPage } from './browser.js';

let app: TestApp;
let browser: Browser;
let ui: RestrictedPage;
const opened: RestrictedPage[] = [];

/**
 * Opens the playground in a fresh browser context (GraphiQL keeps its tabs in localStorage) with an operation in the
 * editor (`#query=` is the playground's shareable-link format).
 */
async function openWith(query: string): Promise<Page> {
  ui = await openRestrictedPage(browser, app.baseUrl);
  opened.push(ui);
  const page = ui.page;
  await page.goto(`${app.baseUrl}/graphql#query=${encodeURIComponent(query)}`);
  await page.locator('.graphiql-container').waitFor({ timeout: 20_000 });
  await expect.poll(() => editorText(page, '.graphiql-query-editor'), { timeout: 20_000 }).toContain(query.slice(0, 12));
  return page;
}

/** Monaco renders spaces as no-break spaces. */
// biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText(), not the DOM property: the rendered text is what is compared.
const editorText = async (page: Page, editor: string) => (await page.locator(`${editor} .view-lines`).innerText()).replace(/\u00a0/g, ' ');

async function run(page: Page): Promise<void> {
  await page.getByRole('button', { name: /Execute query/ }).click();
}

const responseText = (page: Page) => editorText(page, '.graphiql-response');

beforeAll(async () => {
  ensureUiBuilt();
  app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'demo' } });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('GraphQL playground', () => {
  it('is served to a browser navigating to /graphql and runs a query', async () => {
    await openWith('{ serverInfo { version kubeMode } }');
    await run(ui.page);
    await expect.poll(() => responseText(ui.page), { timeout: 15_000 }).toContain('"kubeMode": "sim"');
    await screenshot(ui.page, 'playground-query');
  });

  it('runs a mutation (through Apollo’s CSRF prevention)', async () => {
    await openWith(
      'mutation { bumpAgentImage(input: { image: "registry.rollplane.test/agent:v5", dryRun: true, allowDowngrade: true }) { dryRun plan { name action } } }',
    );
    await run(ui.page);
    await expect.poll(() => responseText(ui.page), { timeout: 15_000 }).toContain('"dryRun": true');
  });

  it('receives subscription events over graphql-ws', async () => {
    const after = await app.domain.events.lastEventId();
    await openWith(`subscription { events(after: "${after}") { id type object { name } } }`);
    await run(ui.page);
    // The subscription is live once the server has it; then an event appended now must arrive.
    await expect.poll(() => ui.page.getByRole('button', { name: /Stop query/ }).count(), { timeout: 15_000 }).toBe(1);
    const [event] = await app.domain.events.append({
      type: 'AgentRecreated',
      kind: 'AGENT_POOL',
      namespace: 'default',
      name: 'playground-probe',
      payload: { pool: 'default/playground-probe', oldImage: 'x/agent:v1', newImage: 'x/agent:v2', reason: 'drift', seconds: 1 },
    });
    await expect.poll(() => responseText(ui.page), { timeout: 15_000 }).toContain('playground-probe');
    expect(await responseText(ui.page)).toContain(`"id": "${event!.id}"`);
    await screenshot(ui.page, 'playground-subscription');
    await ui.page.getByRole('button', { name: /Stop query/ }).click();
  });

  it('browses the schema docs', async () => {
    await ui.page.getByRole('button', { name: 'Show Documentation Explorer' }).click();
    await ui.page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).first().click();
    await ui.page.locator('.graphiql-doc-explorer').getByText('rollouts', { exact: true }).first().waitFor();
    await screenshot(ui.page, 'playground-docs');
  });

  it('loaded nothing from another origin and raised no page errors', () => {
    expect(opened.length).toBeGreaterThan(0);
    expect(opened.flatMap((p) => p.foreign)).toEqual([]);
    expect(opened.flatMap((p) => p.errors)).toEqual([]);
  });
});
