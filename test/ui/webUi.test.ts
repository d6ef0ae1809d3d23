import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ensureUiBuilt, graphql, launchChromium, openRestrictedPage, screenshot, type RestrictedPage } from './browser.js';

let app: TestApp;
let browser: Browser;
let ui: RestrictedPage;

let abortedId: string | undefined;

interface Pool {
  namespace: string;
  name: string;
  runningImage: string | null;
}

async function demoPools(): Promise<Pool[]> {
  const result = await graphql<{ agentPools: { edges: { node: Pool }[] } }>(
    app.baseUrl,
    'query { agentPools(first: 100) { edges { node { namespace name runningImage } } } }',
  );
  expect(result.errors).toBeUndefined();
  return result.data!.agentPools.edges.map((e) => e.node);
}

async function bumpAgentImage(input: Record<string, unknown>): Promise<string> {
  const result = await graphql<{ bumpAgentImage: { rollout: { id: string } } }>(
    app.baseUrl,
    'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { id } } }',
    { input },
  );
  expect(result.errors).toBeUndefined();
  return result.data!.bumpAgentImage.rollout.id;
}

async function rolloutState(id: string): Promise<string> {
  const result = await graphql<{ rollout: { state: string } }>(app.baseUrl, 'query ($id: ID!) { rollout(id: $id) { state } }', { id });
  return result.data!.rollout.state;
}

/** The page reports failed API calls in a banner; none may show. */
async function expectNoErrorBanner(): Promise<void> {
  expect(await ui.page.locator('.banner.error').allTextContents()).toEqual([]);
}

const progressOf = (id: string) => ui.page.locator(`article[data-rollout-id="${id}"] [role="progressbar"]`);

beforeAll(async () => {
  ensureUiBuilt();
  // The real rollout engine and agent-pool controllers, on one replica (no Lease to wait for).
  app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'demo', ROLLPLANE_CONTROLLERS: 'on', ROLLPLANE_LEADER_ELECT: 'false' } });
  browser = await launchChromium();
  ui = await openRestrictedPage(browser, app.baseUrl);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('web UI', () => {
  it('loads the dashboard and the demo fleet, live, with nothing loaded from another origin', async () => {
    const response = await ui.page.goto(`${app.baseUrl}/`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'self'");
    await ui.page.locator('[data-connection="live"]').waitFor({ timeout: 15_000 });
    await expect.poll(() => ui.page.locator('#rollouts-title').textContent()).toMatch(/Rollouts · \d+ active/);

    await ui.page.getByRole('link', { name: 'Fleet' }).click();
    const pools = await demoPools();
    expect(pools.length).toBeGreaterThan(0);
    await expect.poll(() => ui.page.locator('#agent-pools-title').textContent()).toBe(`Agent pools · ${pools.length}`);
    for (const pool of pools) await ui.page.locator(`tr[data-pool="${pool.namespace}/${pool.name}"]`).waitFor();
    await ui.page.locator('#virtual-clusters-title').waitFor();
    await screenshot(ui.page, 'fleet');
    await expectNoErrorBanner();
    expect(ui.errors).toEqual([]);
  });

  it('shows a bump in the feed and moves its progress bar to 100% without a reload', async () => {
    await ui.page.goto(`${app.baseUrl}/#/`);
    await ui.page.locator('[data-connection="live"]').waitFor({ timeout: 15_000 });
    await ui.page.evaluate(() => ((globalThis as unknown as { loadedOnce: boolean }).loadedOnce = true));

    const pools = await demoPools();
    expect(pools.length).toBeGreaterThan(0);
    const image = 'registry.rollplane.test/dhcp-agent:v9.9.9';
    const id = await bumpAgentImage({
      image,
      strategy: { maxUnavailable: '1' },
      cause: { actor: 'ui-test', message: 'bump from the browser test' },
      allowDowngrade: true,
    });
    await progressOf(id).waitFor({ timeout: 15_000 });
    // The agents are recreated one pool at a time by the real controllers on the simulator.
    expect(Number(await progressOf(id).getAttribute('aria-valuenow'))).toBeLessThan(100);
    const expectedRows = pools.map((p) => ({ target: `${p.namespace}/${p.name}`, image: 'dhcp-agent:v9.9.9' }));

    await progressOf(id).waitFor({ timeout: 15_000 });
    await expect.poll(() => progressOf(id).getAttribute('aria-valuenow'), { timeout: 45_000, interval: 200 }).toBe('100');
    for (const row of expectedRows) {
      await ui.page.locator('tr[data-feed-kind="agent"]', { hasText: row.target }).filter({ hasText: row.image }).first().waitFor({ timeout: 15_000 });
    }
    expect(await ui.page.evaluate(() => (globalThis as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);

    await ui.page
      .locator(`article[data-rollout-id="${id}"]`)
      .getByRole('button', { name: /Show \d+ targets/ })
      .click();
    await ui.page.locator(`article[data-rollout-id="${id}"] tr[data-target]`).first().waitFor();
    await screenshot(ui.page, 'dashboard');
    await expectNoErrorBanner();
    expect(ui.errors).toEqual([]);
  });

  it('rolls a finished rollout back from the UI', async () => {
    const finished = ui.page.locator('article.rollout-card.state-succeeded').first();
    const id = await finished.getAttribute('data-rollout-id');
    await finished.getByRole('button', { name: `Rollback rollout ${id}` }).click();
    await finished.getByRole('button', { name: `Confirm rollback of rollout ${id}` }).click();
    const link = finished.getByRole('link', { name: /^rollback ro_/ });
    await link.waitFor({ timeout: 10_000 });
    const rollbackId = (await link.textContent())!.replace('rollback ', '');
    const result = await graphql<{ rollout: { rollbackOf: { id: string } | null } }>(
      app.baseUrl,
      'query ($id: ID!) { rollout(id: $id) { rollbackOf { id } } }',
      { id: rollbackId },
    );
    expect(result.data?.rollout.rollbackOf?.id).toBe(id);
    // The rollback runs like any rollout: its own card, driven to the end by the engine.
    await expect.poll(() => progressOf(rollbackId).getAttribute('aria-valuenow'), { timeout: 45_000, interval: 200 }).toBe('100');
    await expect.poll(() => rolloutState(rollbackId), { timeout: 15_000 }).toBe('SUCCEEDED');
    await expectNoErrorBanner();
  });

  it('pauses a rollout from the UI, then aborts it after a confirmation', async () => {
    await ui.page.goto(`${app.baseUrl}/#/`);
    await ui.page.locator('[data-connection="live"]').waitFor({ timeout: 15_000 });
    // A canary of one: the engine pauses the rollout after the first pool, which leaves two pools (a few seconds of
    // work) for the UI to pause once resumed.
    const id = await bumpAgentImage({
      image: 'registry.rollplane.test/dhcp-agent:v9.9.10',
      strategy: { maxUnavailable: '1', canary: 1 },
      cause: { actor: 'ui-test' },
      allowDowngrade: true,
    });
    await expect.poll(() => rolloutState(id), { timeout: 30_000, interval: 200 }).toBe('PAUSED');
    const card = ui.page.locator(`article[data-rollout-id="${id}"]`);
    await card.getByRole('button', { name: `Resume rollout ${id}` }).click({ timeout: 15_000 });
    await card.getByRole('button', { name: `Pause rollout ${id}` }).click({ timeout: 15_000 });

    const pausedRollout = async () =>
      (
        await graphql<{ rollout: { state: string; message: string | null; progress: { pending: number } } }>(
          app.baseUrl,
          'query ($id: ID!) { rollout(id: $id) { state message progress { pending } } }',
          { id },
        )
      ).data?.rollout;
    await expect.poll(async () => (await pausedRollout())?.message, { timeout: 10_000 }).toBe('from the rollplane web UI');
    const paused = await pausedRollout();
    expect(paused?.state).toBe('PAUSED');
    expect(paused!.progress.pending).toBeGreaterThan(0);
    await card.locator('.badge', { hasText: 'PAUSED' }).first().waitFor();

    await card.getByRole('button', { name: `Abort rollout ${id}` }).click();
    expect(await rolloutState(id)).toBe('PAUSED');
    await card.getByRole('button', { name: `Confirm abort of rollout ${id}` }).click();
    await expect.poll(() => rolloutState(id), { timeout: 10_000 }).toBe('ABORTED');
    await card.locator('.badge', { hasText: 'ABORTED' }).first().waitFor();
    abortedId = id;
    expect(ui.errors).toEqual([]);
  });

  it('charts cluster upgrade observations per cluster version and their distribution', async () => {
    const observations = [
      { version: 'ui-cv-a', seconds: 12.5 },
      { version: 'ui-cv-a', seconds: 30 },
      { version: 'ui-cv-a', seconds: 41 },
      { version: 'ui-cv-b', seconds: 95, outcome: 'FAILED' as const },
      { version: 'ui-cv-b', seconds: 60 },
    ];
    await app.domain.events.append(
      ...observations.map((o, i) => ({
        type: 'ClusterUpgradeObserved' as const,
        kind: 'VIRTUAL_CLUSTER' as const,
        namespace: 'tenants',
        name: `vc-${i}`,
        payload: {
          cluster: `tenants/vc-${i}`,
          clusterVersion: o.version,
          resourceVersion: String(100 + i),
          specVersion: String(100 + i),
          seconds: o.seconds,
          outcome: o.outcome ?? ('SUCCEEDED' as const),
          components: [],
          error: o.outcome ? 'failed' : null,
        },
      })),
    );
    await ui.page.getByRole('link', { name: 'Charts' }).click();
    const row = (version: string) => ui.page.locator(`tr[data-cluster-version="${version}"] .observation-count`);
    await expect.poll(() => row('ui-cv-a').textContent(), { timeout: 10_000 }).toBe('3');
    await expect.poll(() => row('ui-cv-b').textContent()).toBe('2');

    const canvases = ui.page.locator('#upgrade-time-title >> xpath=ancestor::section//canvas');
    await canvases.first().waitFor();
    // The points are drawn: the canvas holds the series' colours, not only axes on white.
    const drawn = await canvases.first().evaluate((element) => {
      // This runs in the page; the test's own types have no DOM, hence the structural type.
      const canvas = element as unknown as {
        width: number;
        height: number;
        getContext(type: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } };
      };
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      let coloured = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i + 3]! > 0 && Math.abs(data[i]! - data[i + 2]!) > 60) coloured++;
      return coloured;
    });
    expect(drawn).toBeGreaterThan(20);
    await expect.poll(() => ui.page.locator('#upgrade-time-title >> xpath=ancestor::section').locator('.u-legend').textContent()).toContain('ui-cv-b');
    await screenshot(ui.page, 'charts');
    await expectNoErrorBanner();
    expect(ui.errors).toEqual([]);
  });

  it('resumes the live feed after the connection drops, with no row lost or repeated', async () => {
    await ui.page.getByRole('link', { name: 'Rollouts & feed' }).click();
    await ui.page.locator('[data-connection="live"]').waitFor();
    await ui.page.evaluate(() => (globalThis as unknown as { rollplane: { dropConnection(): void } }).rollplane.dropConnection());
    // Appended while the page is disconnected (it re-subscribes after a back-off).
    const stored = await app.domain.events.append(
      ...['gap-1', 'gap-2', 'gap-3'].map((name) => ({
        type: 'AgentRecreated' as const,
        kind: 'AGENT_POOL' as const,
        namespace: 'ui-reconnect',
        name,
        payload: {
          pool: `ui-reconnect/${name}`,
          oldImage: 'x/agent:v1',
          newImage: 'x/agent:v2',
          reason: 'drift',
          seconds: 2,
          readyAt: new Date().toISOString(),
        },
      })),
      {
        type: 'NodeAgentReplaced' as const,
        kind: 'NODE_AGENT' as const,
        namespace: '',
        name: 'gap-node',
        payload: {
          node: 'gap-node',
          daemonSet: 'ns/agent',
          oldPod: null,
          newPod: null,
          oldImage: 'x/node-agent:v1',
          newImage: 'x/node-agent:v2',
          peerPodsRestarted: 2,
          seconds: 4,
        },
      },
    );
    for (const event of stored) await ui.page.locator(`tr[data-event-id="${event.id}"]`).waitFor({ timeout: 15_000 });
    expect(await ui.page.locator(`tr[data-event-id="${stored[3]!.id}"]`).getAttribute('data-feed-kind')).toBe('node');
    // Its typed payload (Event.nodeAgentReplacement, ADR 0046) reached the row.
    expect(await ui.page.locator(`tr[data-event-id="${stored[3]!.id}"]`).textContent()).toMatch(/node gap-node.*\(2 peer pods back\)/);
    await ui.page.locator('[data-connection="live"]').waitFor();
    const ids = await ui.page.locator('table.feed tr[data-event-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')));
    expect(new Set(ids).size).toBe(ids.length);
    for (const event of stored) expect(ids.filter((id) => id === String(event.id))).toHaveLength(1);
    expect(ui.errors.filter((e) => !e.includes('WebSocket'))).toEqual([]);
  });

  it('finds rollouts in the history and opens a rollout’s detail view', async () => {
    await ui.page.getByRole('link', { name: 'History' }).click();
    await ui.page.getByLabel('Search').fill('ui-test');
    const rows = ui.page.locator('table[aria-label="Rollout history"] tbody tr[data-rollout-id]');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await ui.page.getByLabel('State').selectOption('ABORTED');
    const aborted = ui.page.locator(`table[aria-label="Rollout history"] tbody tr[data-rollout-id="${abortedId}"]`);
    await aborted.waitFor({ timeout: 10_000 });
    await expect.poll(async () => [...new Set(await rows.locator('.badge').allTextContents())], { timeout: 10_000 }).toEqual(['ABORTED']);
    await screenshot(ui.page, 'history');

    const id = abortedId!;
    await aborted.getByRole('link', { name: id }).click();
    await expect.poll(() => ui.page.locator('#rollout-detail-title').textContent()).toBe(`Rollout ${id}`);
    await ui.page.locator('#rollout-targets-title >> xpath=ancestor::section//tr[@data-target]').first().waitFor();
    await ui.page.locator('table[aria-label^="Events of rollout"] tr[data-event-id]').first().waitFor();
    await screenshot(ui.page, 'rollout-detail');
    await expectNoErrorBanner();

    await ui.page.getByRole('link', { name: 'History' }).click();
    await ui.page.getByRole('link', { name: 'Events' }).click();
    const eventRows = ui.page.locator('table[aria-label="Event history"] tbody tr[data-event-id]');
    await eventRows.first().waitFor();
    await ui.page.getByRole('group', { name: 'Types' }).getByLabel('AgentRecreated').check();
    await expect.poll(async () => [...new Set(await eventRows.locator('td:nth-child(3)').allTextContents())], { timeout: 10_000 }).toEqual(['AgentRecreated']);
    await screenshot(ui.page, 'events');
    expect(ui.errors.filter((e) => !e.includes('WebSocket'))).toEqual([]);
  });

  it('shows "not available yet" for a section whose field answers NOT_IMPLEMENTED, and the rest as usual', async () => {
    // Every field is backed on this server now; the page answers agentPools as a server without that part would.
    const page = await ui.context.newPage();
    await page.route(`${app.baseUrl}/graphql`, async (route) => {
      if (!route.request().postData()?.includes('query AgentPools')) return route.fallback();
      await route.fulfill({
        contentType: 'application/json',
        body: JSON.stringify({ data: null, errors: [{ message: 'agentPools is not implemented yet', extensions: { code: 'NOT_IMPLEMENTED' } }] }),
      });
    });
    await page.goto(`${app.baseUrl}/#/fleet`);
    await page.getByText('Not available yet: this server does not back agent pools yet.').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('#virtual-clusters-title').textContent(), { timeout: 10_000 }).toMatch(/Virtual clusters · \d+/);
    expect(await page.locator('[role="alert"]').count()).toBe(0);
    await page.close();
  });

  it('is keyboard reachable: skip link, then the main navigation', async () => {
    const page = await ui.context.newPage();
    await page.goto(`${app.baseUrl}/`);
    await page.locator('[data-connection="live"]').waitFor();
    // Page-side expressions as strings: the test's own types have no DOM.
    const focused = () => page.evaluate('document.activeElement?.textContent');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Rollouts & feed');
    // The focus ring is visible (not suppressed by the styles).
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).not.toBe('none');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/fleet');
    await page.close();
  });

  it('served the UI with no request to any other origin', () => {
    expect(ui.foreign).toEqual([]);
  });
});

describe('UI asset server', () => {
  it('serves hashed assets with long caching and refuses paths outside the build', async () => {
    const html = await (await fetch(`${app.baseUrl}/`)).text();
    const script = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${app.baseUrl}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('text/javascript');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${app.baseUrl}/ui/assets/nope.js`)).status).toBe(404);
    expect((await fetch(`${app.baseUrl}/ui/%2e%2e/%2e%2e/package.json`)).status).toBe(404);
    expect((await fetch(`${app.baseUrl}/ui/..%2f..%2fpackage.json`)).status).toBe(404);
  });

  it('leaves GraphQL requests to the API: POST, GET with a query, and GET without text/html', async () => {
    const post = await graphql<{ serverInfo: { version: string } }>(app.baseUrl, '{ serverInfo { version } }');
    expect(post.data?.serverInfo.version).toBeTruthy();
    const get = await fetch(`${app.baseUrl}/graphql?query=${encodeURIComponent('{ serverInfo { version } }')}`, {
      headers: { accept: 'text/html,application/json', 'apollo-require-preflight': 'true' },
    });
    expect(get.headers.get('content-type')).toContain('json');
    const api = await fetch(`${app.baseUrl}/graphql`, { headers: { accept: 'application/json' } });
    expect(api.headers.get('content-type') ?? '').not.toContain('text/html');
    const page = await fetch(`${app.baseUrl}/graphql`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('GraphQL playground');
  });
});
