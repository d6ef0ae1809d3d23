import { AdmissionregistrationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookAnswer, WebhookReview } from '../../../src/sim/admission/webhooks.js';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { Resources } from '../../../src/sim/store/resources.js';
import { expectStatus } from '../apiHelpers.js';

// Validating admission webhooks in general, through client-node over HTTP: a ValidatingWebhookConfiguration calls the
// server behind its Service only through Ready endpoints; call errors fail closed (Fail) or open (Ignore); a denial
// carries the webhook's own message and code; dry runs are checked too; nothing is written on a refusal.

const NS = 'hooks';
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const URL = `https://guard.${NS}.svc:443/validate?timeout=10s`;

let sim: Simulator;
let core: CoreV1Api;
let admission: AdmissionregistrationV1Api;
let calls: WebhookReview[];
let answer: (review: WebhookReview) => WebhookAnswer;

beforeEach(async () => {
  sim = await startSimulator({ behaviour: false });
  core = sim.kubeConfig.makeApiClient(CoreV1Api);
  admission = sim.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'cm', labels: { guarded: 'yes' } }, data: { a: '1' } } });
  calls = [];
  answer = () => ({ allowed: true });
  sim.store.webhookServers.serve(NS, 'guard', (review) => {
    calls.push(review);
    return answer(review);
  });
});

afterEach(async () => {
  await sim?.stop();
});

async function register(options: { failurePolicy?: 'Fail' | 'Ignore'; resources?: string[]; objectSelector?: object; timeoutSeconds?: number } = {}) {
  await admission.createValidatingWebhookConfiguration({
    body: {
      metadata: { name: 'guard' },
      webhooks: [
        {
          name: 'guard.example.io',
          clientConfig: { service: { namespace: NS, name: 'guard', path: '/validate', port: 443 } },
          rules: [{ operations: ['CREATE', 'UPDATE', 'DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: options.resources ?? ['configmaps'] }],
          ...(options.failurePolicy ? { failurePolicy: options.failurePolicy } : {}),
          ...(options.objectSelector ? { objectSelector: options.objectSelector } : {}),
          ...(options.timeoutSeconds ? { timeoutSeconds: options.timeoutSeconds } : {}),
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    },
  });
}

/** The Service and, when `ready`, one Ready pod behind it (what the EndpointSlice controller would publish). */
async function backend(ready: boolean) {
  await core.createNamespacedService({ namespace: NS, body: { metadata: { name: 'guard' }, spec: { selector: { app: 'guard' }, ports: [{ port: 443 }] } } });
  sim.store.create(Resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'guard-0', namespace: NS, labels: { app: 'guard' } },
    spec: { containers: [{ name: 'guard', image: 'guard:1' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });
}

const patchCm = (value: string, dryRun?: 'All') =>
  core.patchNamespacedConfigMap({ name: 'cm', namespace: NS, body: { data: { a: value } }, ...(dryRun ? { dryRun } : {}) }, merge);
const stored = async () => (await core.readNamespacedConfigMap({ name: 'cm', namespace: NS })).data?.a;

describe('validating admission webhooks', () => {
  it('calls the server behind the Service with the request, and writes what it allows', async () => {
    await backend(true);
    await register();
    await patchCm('2');
    expect(await stored()).toBe('2');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      path: '/validate',
      operation: 'UPDATE',
      name: 'cm',
      namespace: NS,
      resource: { group: '', version: 'v1', resource: 'configmaps' },
      object: { data: { a: '2' } },
      oldObject: { data: { a: '1' } },
      dryRun: false,
    });
  });

  it('refuses what the webhook denies, with its own code and message, and writes nothing (dry runs included)', async () => {
    await backend(true);
    await register();
    answer = () => ({ allowed: false, status: { code: 422, reason: 'Invalid', message: 'a must stay 1' } });
    const status = await expectStatus(patchCm('3'), 422, 'Invalid');
    expect(status.message).toBe('admission webhook "guard.example.io" denied the request: a must stay 1');
    await expectStatus(patchCm('3', 'All'), 422, 'Invalid');
    expect(calls.map((c) => c.dryRun)).toEqual([false, true]);
    expect(await stored()).toBe('1');
  });

  it('fails closed (Fail, the default) without a Ready endpoint, without the Service, or when the server hangs; Ignore lets the write through', async () => {
    await register();
    // No Service at all.
    let status = await expectStatus(patchCm('4'), 500, 'InternalError');
    expect(status.message).toBe(
      `Internal error occurred: failed calling webhook "guard.example.io": failed to call webhook: Post "${URL}": service "guard" not found`,
    );
    // A Service, its only pod not Ready.
    await backend(false);
    status = await expectStatus(patchCm('4', 'All'), 500, 'InternalError');
    expect(status.message).toBe(
      `Internal error occurred: failed calling webhook "guard.example.io": failed to call webhook: Post "${URL}": no endpoints available for service "guard"`,
    );
    expect(status.details.causes[0].message).toContain('no endpoints available for service "guard"');
    expect(calls).toEqual([]);
    expect(await stored()).toBe('1');
    // Ready, but the server hangs past timeoutSeconds.
    sim.store.update(
      Resources.pods,
      { ...structuredClone(sim.store.get(Resources.pods, NS, 'guard-0')!), status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } },
      'status',
    );
    answer = () => ({ hang: true });
    status = await expectStatus(patchCm('4'), 500, 'InternalError');
    expect(status.message).toBe(
      `Internal error occurred: failed calling webhook "guard.example.io": failed to call webhook: Post "${URL}": context deadline exceeded`,
    );
    // The same failures under Ignore: the write goes through.
    await admission.deleteValidatingWebhookConfiguration({ name: 'guard' });
    await register({ failurePolicy: 'Ignore' });
    await patchCm('5');
    expect(await stored()).toBe('5');
  });

  it('follows the endpoints from one write to the next: the serving pod going unready, away or out of the selector, another one taking over', async () => {
    await backend(true);
    await register();
    await patchCm('2');
    const readiness = (name: string, ready: boolean) =>
      sim.store.update(
        Resources.pods,
        {
          ...structuredClone(sim.store.get(Resources.pods, NS, name)!),
          status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
        },
        'status',
      );
    const noEndpoints = async () => {
      const status = await expectStatus(patchCm('x'), 500, 'InternalError');
      expect(status.message).toContain('no endpoints available for service "guard"');
    };
    readiness('guard-0', false);
    await noEndpoints();
    sim.store.create(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'guard-1', namespace: NS, labels: { app: 'guard' } },
      spec: { containers: [{ name: 'guard', image: 'guard:1' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    await patchCm('3');
    readiness('guard-0', true);
    // The pod that served last is deleted: the other one still serves.
    sim.store.delete(Resources.pods, NS, 'guard-1');
    await patchCm('4');
    // Its labels no longer match the selector.
    const pod = structuredClone(sim.store.get(Resources.pods, NS, 'guard-0')!);
    sim.store.update(Resources.pods, { ...pod, metadata: { ...pod.metadata, labels: { app: 'other' } } });
    await noEndpoints();
    expect(await stored()).toBe('4');
    expect(calls).toHaveLength(3);
  });

  it('matches rules by resource, subresource and object selector', async () => {
    await backend(true);
    answer = () => ({ allowed: false, status: { message: 'no' } });
    await register({ resources: ['secrets'] });
    await patchCm('6'); // not a configmaps rule
    await admission.deleteValidatingWebhookConfiguration({ name: 'guard' });
    await register({ objectSelector: { matchLabels: { guarded: 'no' } } });
    await patchCm('7'); // the object's labels do not match
    await admission.deleteValidatingWebhookConfiguration({ name: 'guard' });
    await register({ objectSelector: { matchLabels: { guarded: 'yes' } } });
    const status = await expectStatus(patchCm('8'), 400, 'BadRequest');
    expect(status.message).toBe('admission webhook "guard.example.io" denied the request: no');
    expect(await stored()).toBe('7');
  });
});
