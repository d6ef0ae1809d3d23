import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // Belt and braces for the air-gap check: no name resolves but the loopback address the server listens on.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ARTIFACTS = path.join(ROOT, 'test-artifacts');

/** Fails (never skips) when Debian's chromium is missing: .ci/run installs it. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: the browser tests need Debian's chromium (apt-get install -y chromium; .ci/run installs it)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/**
 * Builds the UI when dist/ui is missing or older than any of its sources (the shared UI in src/ui/client, its entry
 * point src/webUi.ts, the kinds' list src/kinds/ui.ts and their views src/kinds/<kind>/ui: ADR 0052), so that the
 * tests always run the current code (npm install and npm run build do the same build).
 */
export function ensureUiBuilt(): void {
  const built = path.join(ROOT, 'dist', 'ui', 'index.html');
  const client = path.join(ROOT, 'src', 'ui', 'client');
  const kinds = path.join(ROOT, 'src', 'kinds');
  const kindViews = readdirSync(kinds, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(path.join(kinds, e.name, 'ui')))
    .map((e) => path.join(kinds, e.name, 'ui'));
  const sources = [client, ...kindViews].flatMap((dir) => readdirSync(dir).map((f) => path.join(dir, f)));
  sources.push(path.join(ROOT, 'src', 'webUi.ts'), path.join(kinds, 'ui.ts'));
  const newest = Math.max(...sources.map((f) => statSync(f).mtimeMs));
  if (existsSync(built) && statSync(built).mtimeMs >= newest) return;
  // Without vitest's NODE_ENV=test, which Vite would keep and so bundle React's development build: the tests drive the
  // bundle `npm run build` ships.
  const { NODE_ENV: _testEnv, ...env } = process.env;
  execFileSync(process.execPath, [path.join(client, 'build.mjs')], { cwd: ROOT, stdio: 'pipe', env });
}

export interface RestrictedPage {
  context: BrowserContext;
  page: Page;
  /** Requests (HTTP or WebSocket) the page attempted to anything but the rollplane server; must stay empty. */
  foreign: string[];
  /** Uncaught page errors and console errors. */
  errors: string[];
}

/**
 * A page whose network is limited to the rollplane server: every request to another origin is aborted and recorded
 * (as on an air-gapped cluster), WebSockets to other origins are recorded too.
 */
export async function openRestrictedPage(browser: Browser, baseUrl: string): Promise<RestrictedPage> {
  const origin = new URL(baseUrl).origin;
  const wsOrigin = origin.replace(/^http/, 'ws');
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  const foreign: string[] = [];
  const errors: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`)) return route.continue();
    foreign.push(url);
    return route.abort('blockedbyclient');
  });
  context.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith('data:') && !url.startsWith('blob:') && !foreign.includes(url)) foreign.push(url);
  });
  const page = await context.newPage();
  page.on('websocket', (ws) => {
    if (!ws.url().startsWith(`${wsOrigin}/`)) foreign.push(ws.url());
  });
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    // Failed responses are reported below with their URL.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) errors.push(`console: ${message.text()}`);
  });
  page.on('response', async (response) => {
    if (response.status() >= 500)
      errors.push(
        `HTTP ${response.status()} ${response.request().method()} ${response.url()}: ${(await response.text().catch(() => '')).slice(0, 300)} ${response.request().postData()?.slice(0, 200) ?? ''}`,
      );
  });
  return { context, page, foreign, errors };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

/** GraphQL over HTTP from the test (as CI would call the API). */
export async function graphql<T>(
  baseUrl: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<{ data?: T; errors?: { message: string; extensions?: { code?: string } }[] }> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
}
