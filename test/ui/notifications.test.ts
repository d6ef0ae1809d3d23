import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../src/domain/events.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';
import { ensureUiBuilt, graphql, launchChromium, openRestrictedPage, type RestrictedPage } from './browser.js';

let app: TestApp;
let browser: Browser;
let ui: RestrictedPage;
let receiver: Receiver;

beforeAll(async () => {
  ensureUiBuilt();
  receiver = await Receiver.start();
  app = await startTestApp({
    env: { ROLLPLANE_CONTROLLERS: 'on', ROLLPLANE_LEADER_ELECT: 'false', ROLLPLANE_NOTIFY_ALLOW_NETWORKS: '127.0.0.0/8', ROLLPLANE_NOTIFY_MAX_ATTEMPTS: '1' },
  });
  browser = await launchChromium();
  ui = await openRestrictedPage(browser, app.baseUrl);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await receiver?.close();
});

describe('the notifications page', () => {
  it('creates a subscription, lists it with its last error and the failed deliveries, replays one and deletes the subscription', async () => {
    receiver.on('/ui', (r) => (r.n === 0 ? { status: 502, body: 'bad gateway' } : { status: 200 }));
    await ui.page.goto(`${app.baseUrl}/#/notifications`);
    const form = ui.page.getByRole('form', { name: 'New notification subscription' });
    await form.getByLabel('Name').fill('pipeline hook');
    await form.getByLabel('URL').fill(receiver.url('/ui'));
    await form.getByRole('button', { name: 'Create' }).click();
    const secret = await ui.page.locator('[data-signing-secret]').textContent({ timeout: 15_000 });
    expect(secret).toMatch(/^whsec_/);
    const listed = await graphql<{ notificationSubscriptions: { edges: { node: { id: string; filter: { states: string[] } } }[] } }>(
      app.baseUrl,
      '{ notificationSubscriptions { edges { node { id filter { states } } } } }',
    );
    const [{ node: subscription }] = listed.data!.notificationSubscriptions.edges as [{ node: { id: string; filter: { states: string[] } } }];
    expect(subscription.filter.states).toEqual(['FAILED']);
    const [event] = await app.domain.events.append({
      type: EventType.RolloutStateChanged,
      rolloutId: 'ro_ui',
      kind: 'AGENT_POOL',
      payload: { from: 'PROGRESSING', to: 'FAILED' },
    });
    await until('the 502 to be dead-lettered', () => receiver.at('/ui').length === 1);

    await ui.page.goto(`${app.baseUrl}/#/notifications`);
    const subscriptions = ui.page.getByRole('table', { name: 'Notification subscriptions' });
    const row = subscriptions.locator(`tr[data-subscription-id="${subscription.id}"]`);
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain('HTTP 502: bad gateway');
    expect(await row.textContent()).toContain('→ FAILED');
    const failure = ui.page.getByRole('table', { name: 'Failed deliveries' }).locator('tr[data-delivery-id]');
    await expect.poll(() => failure.count(), { timeout: 15_000 }).toBe(1);
    expect(await failure.textContent()).toContain(`rollout.failed #${event!.id} in ro_ui`);
    expect(await failure.textContent()).toContain('DEAD LETTER');

    await failure.getByRole('button', { name: /^Replay delivery / }).click();
    await until('the replay to arrive', () => receiver.at('/ui').some((r) => r.answer === 200));
    await expect.poll(() => ui.page.getByRole('table', { name: 'Failed deliveries' }).textContent(), { timeout: 15_000 }).toContain('No failed deliveries.');
    // Deleted after a confirmation.
    const rowOf = () => subscriptions.locator(`tr[data-subscription-id="${subscription.id}"]`);
    await rowOf().getByRole('button', { name: 'Delete subscription pipeline hook' }).click();
    await rowOf().getByRole('button', { name: 'Confirm deletion of subscription pipeline hook' }).click();
    await expect.poll(() => rowOf().count(), { timeout: 15_000 }).toBe(0);
    expect(ui.errors).toEqual([]);
    expect(ui.foreign).toEqual([]);
  });
});
