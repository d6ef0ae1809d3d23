import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { MEMBER_FLEET_ENV, registerMembers } from '../helpers/memberFleet.js';
import { ensureUiBuilt, launchChromium, openRestrictedPage, type RestrictedPage, screenshot } from './browser.js';

/**
 * The Clusters page in Chromium (`local` and one simulated member): a column per kind with the versions its targets
 * run and their counts and the drift, read from each cluster's caches (MemberCluster.kindFigures).
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';

let dir: string;
let fleet: SimulatedClusters;
let app: TestApp;
let browser: Browser;
let ui: RestrictedPage;

beforeAll(async () => {
  ensureUiBuilt();
  dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane clusters page '));
  fleet = await startSimulatedClusters({ clusters: [{ name: 'edge-1', fleet: 'pools=3,nodes=2' }] });
  registerMembers(dir, fleet, ['edge-1'], () => ({ tier: 'edge' }));
  app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=2,nodes=1' } });
  browser = await launchChromium();
  ui = await openRestrictedPage(browser, app.baseUrl);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await fleet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the Clusters page', () => {
  it("shows each cluster's agent-pool versions with counts and its drift", async () => {
    await ui.page.goto(`${app.baseUrl}/#/clusters`);
    const cell = (cluster: string) => ui.page.locator(`tr[data-cluster="${cluster}"] td[data-kind="AGENT_POOL"]`);
    await expect.poll(() => cell('local').textContent(), { timeout: 20_000 }).toBe(`${OLD} × 2in sync`);
    // The member's figures once its runtime's caches synced (the page polls).
    await expect.poll(() => cell('edge-1').textContent(), { timeout: 30_000 }).toBe(`${OLD} × 3in sync`);
    await expect(ui.page.locator('th', { hasText: 'Agent pools' }).count()).resolves.toBe(1);
    await screenshot(ui.page, 'clusters-kind-figures');
    expect(ui.errors).toEqual([]);
    expect(ui.foreign).toEqual([]);
  });
});
