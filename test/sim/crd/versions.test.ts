import { type CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../../src/sim/index.js';
import { until } from '../../helpers/until.js';
import { expectStatus } from '../apiHelpers.js';
import { CRDS, rawRequest, startWithCrds } from './crdFixture.js';

/**
 * A CRD with several versions, served as kube-apiserver serves `conversion.strategy: None`: every served version at its
 * own path over the same stored objects (v1 is the storage version), each request's apiVersion rewritten, each write
 * pruned/defaulted/validated by the requested version's schema, reads pruned by it, discovery and OpenAPI per version.
 */
let sim: Simulator;
let custom: CustomObjectsApi;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const GROUP = 'example.org';
const NS = 'default';
const CRD_NAME = 'gizmos.example.org';

const version = (name: string, served: boolean, storage: boolean, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name,
  served,
  storage,
  ...extra,
  schema: {
    openAPIV3Schema: {
      type: 'object',
      properties: { spec: { type: 'object', properties: spec }, status: { type: 'object', properties: { phase: { type: 'string' } } } },
    },
  },
});

const STATUS = { subresources: { status: {} } };

/** v1 stores; v1beta1 has a stricter size, a `color` default and no `extra`; v1alpha1 is deprecated and only knows `size` and `legacy`. */
function gizmoCrd(versions?: unknown[]): any {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME },
    spec: {
      group: GROUP,
      names: { kind: 'Gizmo', plural: 'gizmos' },
      scope: 'Namespaced',
      versions: versions ?? [
        version('v1alpha1', true, false, { size: { type: 'integer' }, legacy: { type: 'string' } }, { deprecated: true }),
        version('v1beta1', true, false, { size: { type: 'integer', maximum: 5 }, color: { type: 'string', enum: ['red', 'green'], default: 'red' } }, STATUS),
        version('v1', true, true, { size: { type: 'integer', maximum: 10 }, color: { type: 'string' }, extra: { type: 'string' } }, STATUS),
        version('v2alpha1', false, false, { size: { type: 'integer' } }),
      ],
    },
  };
}

const raw = (method: string, path: string, body?: unknown, contentType?: string) => rawRequest(sim, method, path, body, contentType);

const path = (v: string, name?: string) => `/apis/${GROUP}/${v}/namespaces/${NS}/gizmos${name ? `/${name}` : ''}`;
const gizmo = (v: string, name: string, spec: Record<string, unknown>) => ({ apiVersion: `${GROUP}/${v}`, kind: 'Gizmo', metadata: { name }, spec });
const create = (v: string, name: string, spec: Record<string, unknown>) =>
  custom.createNamespacedCustomObject({ group: GROUP, version: v, plural: 'gizmos', namespace: NS, body: gizmo(v, name, spec) }) as Promise<any>;
const read = (v: string, name: string) => custom.getNamespacedCustomObject({ group: GROUP, version: v, plural: 'gizmos', namespace: NS, name }) as Promise<any>;
/** The object as the store holds it (what etcd would). */
const stored = (name: string) => sim.store.get(sim.store.resourceType(GROUP, 'gizmos')!, NS, name);

beforeAll(async () => {
  ({ sim, custom } = await startWithCrds(gizmoCrd()));
});

afterAll(async () => {
  await sim?.stop();
});

describe('discovery and OpenAPI list every served version', () => {
  it('lists the served versions in Kubernetes priority order, the preferred one first, and not the unserved one', async () => {
    const group = await raw('GET', `/apis/${GROUP}`);
    expect(group.body.versions.map((v: { version: string }) => v.version)).toEqual(['v1', 'v1beta1', 'v1alpha1']);
    expect(group.body.preferredVersion).toEqual({ groupVersion: `${GROUP}/v1`, version: 'v1' });
    const all = await raw('GET', '/apis');
    const entry = all.body.groups.find((g: { name: string }) => g.name === GROUP);
    expect(entry.preferredVersion.version).toBe('v1');
    expect(entry.versions).toHaveLength(3);
    const hashes = new Set<string>();
    for (const v of ['v1', 'v1beta1', 'v1alpha1']) {
      const list = await raw('GET', `/apis/${GROUP}/${v}`);
      expect(list.status).toBe(200);
      const resource = list.body.resources.find((r: { name: string }) => r.name === 'gizmos');
      expect(resource).toMatchObject({ kind: 'Gizmo', namespaced: true });
      hashes.add(resource.storageVersionHash);
    }
    // One storage place for every version.
    expect(hashes.size).toBe(1);
    expect((await raw('GET', `/apis/${GROUP}/v2alpha1`)).status).toBe(404);
  });

  it('serves an OpenAPI v3 document per served version, each with its own schema', async () => {
    const index = await raw('GET', '/openapi/v3');
    const paths = Object.keys(index.body.paths).filter((p) => p.startsWith(`apis/${GROUP}/`));
    expect(paths.sort()).toEqual([`apis/${GROUP}/v1`, `apis/${GROUP}/v1alpha1`, `apis/${GROUP}/v1beta1`]);
    const beta = await raw('GET', `/openapi/v3/apis/${GROUP}/v1beta1`);
    const schema = beta.body.components.schemas[`org.example.v1beta1.Gizmo`];
    expect(schema.properties.spec.properties.color.enum).toEqual(['red', 'green']);
    expect(schema.properties.spec.properties.extra).toBeUndefined();
    expect(schema['x-kubernetes-group-version-kind']).toEqual([{ group: GROUP, version: 'v1beta1', kind: 'Gizmo' }]);
    const v1 = await raw('GET', `/openapi/v3/apis/${GROUP}/v1`);
    expect(v1.body.components.schemas['org.example.v1.Gizmo'].properties.spec.properties.extra).toEqual({ type: 'string' });
    expect((await raw('GET', `/openapi/v3/apis/${GROUP}/v2alpha1`)).status).toBe(404);
  });
});

describe('one set of objects through every served version', () => {
  it('writes through a non-storage version with its schema, stores in the storage version, reads back in each version', async () => {
    const created = await create('v1beta1', 'g1', { size: 3 });
    // The v1beta1 default applies; the response speaks v1beta1.
    expect(created.apiVersion).toBe(`${GROUP}/v1beta1`);
    expect(created.spec).toEqual({ size: 3, color: 'red' });
    expect(stored('g1')!.apiVersion).toBe(`${GROUP}/v1`);
    expect(stored('g1')!.spec).toEqual({ size: 3, color: 'red' });
    const v1 = await read('v1', 'g1');
    expect(v1.apiVersion).toBe(`${GROUP}/v1`);
    expect(v1.metadata.uid).toBe(created.metadata.uid);
    expect(v1.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    // v1alpha1 declares no color: the read is pruned by the requested version's schema.
    const alpha = await read('v1alpha1', 'g1');
    expect(alpha.apiVersion).toBe(`${GROUP}/v1alpha1`);
    expect(alpha.spec).toEqual({ size: 3 });
  });

  it('validates with the requested version: a size v1 allows is refused through v1beta1, nothing stored', async () => {
    const body = await expectStatus(create('v1beta1', 'g-big', { size: 7 }), 422, 'Invalid');
    expect(body.message).toContain('Gizmo.example.org "g-big" is invalid');
    expect(body.details.causes).toEqual([
      expect.objectContaining({ field: 'spec.size', message: 'Invalid value: 7: spec.size in body should be less than or equal to 5' }),
    ]);
    expect(stored('g-big')).toBeUndefined();
    const ok = await create('v1', 'g-big', { size: 7 });
    expect(ok.spec.size).toBe(7);
    // An update through v1beta1 is checked by v1beta1's schema too.
    await expectStatus(
      custom.patchNamespacedCustomObject(
        { group: GROUP, version: 'v1beta1', plural: 'gizmos', namespace: NS, name: 'g-big', body: { spec: { size: 8 } } },
        merge,
      ),
      422,
      'Invalid',
    );
    expect(stored('g-big')!.spec.size).toBe(7);
  });

  it('prunes a field only the other version declares, per the requested version', async () => {
    const pruned = await raw('POST', path('v1beta1'), gizmo('v1beta1', 'g-extra-beta', { size: 1, extra: 'x' }));
    expect(pruned.status).toBe(201);
    expect(pruned.warning).toBe('299 - "unknown field \\"spec.extra\\""');
    expect(pruned.body.spec.extra).toBeUndefined();
    expect(stored('g-extra-beta')!.spec.extra).toBeUndefined();

    const kept = await create('v1', 'g-extra', { size: 1, extra: 'x' });
    expect(kept.spec.extra).toBe('x');
    expect(stored('g-extra')!.spec.extra).toBe('x');
    // Reading through v1beta1 prunes it from the response, not from storage.
    expect((await read('v1beta1', 'g-extra')).spec.extra).toBeUndefined();
    expect((await read('v1', 'g-extra')).spec.extra).toBe('x');

    // Strict field validation refuses it through v1beta1.
    const strict = await raw('POST', `${path('v1beta1')}?fieldValidation=Strict`, gizmo('v1beta1', 'g-strict', { size: 1, extra: 'x' }));
    expect(strict.status).toBe(400);
    expect(strict.body.message).toContain('Gizmo in version "v1beta1" cannot be handled as a Gizmo: strict decoding error: unknown field "spec.extra"');
  });

  it('loses a field only a non-storage version declares, as conversion None does: the storage schema prunes it', async () => {
    const created = await create('v1alpha1', 'g-legacy', { size: 2, legacy: 'old' });
    expect(created.apiVersion).toBe(`${GROUP}/v1alpha1`);
    expect(created.spec).toEqual({ size: 2 });
    expect(stored('g-legacy')!.spec).toEqual({ size: 2 });
  });

  it('lists through any version, with the list and each item in that version', async () => {
    const list = (await custom.listNamespacedCustomObject({ group: GROUP, version: 'v1alpha1', plural: 'gizmos', namespace: NS })) as any;
    expect(list.apiVersion).toBe(`${GROUP}/v1alpha1`);
    expect(list.kind).toBe('GizmoList');
    expect(list.items.length).toBeGreaterThanOrEqual(3);
    for (const item of list.items) expect(item.apiVersion).toBe(`${GROUP}/v1alpha1`);
    expect(list.items.find((i: any) => i.metadata.name === 'g-extra').spec.extra).toBeUndefined();
  });

  it('patches and deletes through a non-storage version, answering in it', async () => {
    await create('v1', 'g-patch', { size: 1 });
    const patched = (await custom.patchNamespacedCustomObject(
      { group: GROUP, version: 'v1beta1', plural: 'gizmos', namespace: NS, name: 'g-patch', body: { spec: { size: 4 } } },
      merge,
    )) as any;
    expect(patched.apiVersion).toBe(`${GROUP}/v1beta1`);
    // v1beta1's default lands on the update written through it.
    expect(patched.spec).toEqual({ size: 4, color: 'red' });
    expect(stored('g-patch')!.apiVersion).toBe(`${GROUP}/v1`);
    const status = await raw('PUT', `${path('v1beta1', 'g-patch')}/status`, { ...patched, status: { phase: 'Ready' } });
    expect(status.status).toBe(200);
    expect(status.body.apiVersion).toBe(`${GROUP}/v1beta1`);
    expect(stored('g-patch')!.status).toEqual({ phase: 'Ready' });
    // Subresources are per version: v1alpha1 declares none, so its status is part of the main resource.
    expect((await raw('PUT', `${path('v1alpha1', 'g-patch')}/status`, { ...patched, apiVersion: `${GROUP}/v1alpha1` })).status).toBe(404);
    const deleted = await raw('DELETE', path('v1alpha1', 'g-patch'));
    expect(deleted.status).toBe(200);
    expect(deleted.body.apiVersion).toBe(`${GROUP}/v1alpha1`);
    expect(stored('g-patch')).toBeUndefined();
  });

  it('answers 404 through a version that is not served, for reads and writes, and stores nothing', async () => {
    expect((await raw('GET', path('v2alpha1'))).status).toBe(404);
    expect((await raw('GET', path('v2alpha1', 'g1'))).status).toBe(404);
    const write = await raw('POST', path('v2alpha1'), gizmo('v2alpha1', 'g-unserved', { size: 1 }));
    expect(write.status).toBe(404);
    expect(write.body.reason).toBe('NotFound');
    expect(stored('g-unserved')).toBeUndefined();
    // A body in another version than the URL's is refused.
    const mismatch = await raw('POST', path('v1'), gizmo('v1beta1', 'g-mismatch', { size: 1 }));
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.message).toContain('the API version in the data (example.org/v1beta1) does not match the expected API version (example.org/v1)');
  });

  it('warns on every request through a deprecated version, naming the newest served version', async () => {
    const expected = `299 - "${GROUP}/v1alpha1 Gizmo is deprecated; use ${GROUP}/v1 Gizmo"`;
    expect((await raw('GET', path('v1alpha1', 'g1'))).warning).toBe(expected);
    expect((await raw('GET', path('v1alpha1'))).warning).toBe(expected);
    const write = await raw('POST', path('v1alpha1'), gizmo('v1alpha1', 'g-dep', { size: 1, color: 'x' }));
    expect(write.status).toBe(201);
    // The deprecation first, then the pruned field.
    expect(write.warning).toBe(`${expected}, 299 - "unknown field \\"spec.color\\""`);
    expect((await raw('GET', path('v1beta1', 'g1'))).warning).toBeNull();
  });

  it('delivers watch events in the watcher’s version, whatever version the write came through', async () => {
    const from = String(sim.store.currentRevision());
    const seen: { type: string; object: any }[] = [];
    const controller = await new Watch(sim.kubeConfig).watch(
      path('v1alpha1'),
      { resourceVersion: from },
      (type, object) => seen.push({ type, object }),
      () => undefined,
    );
    try {
      await create('v1', 'g-watch', { size: 2, color: 'green' });
      await custom.patchNamespacedCustomObject(
        { group: GROUP, version: 'v1beta1', plural: 'gizmos', namespace: NS, name: 'g-watch', body: { spec: { size: 3 } } },
        merge,
      );
      await raw('DELETE', path('v1', 'g-watch'));
      await until('three events for g-watch', () => seen.filter((e) => e.object?.metadata?.name === 'g-watch').length >= 3);
      const events = seen.filter((e) => e.object.metadata.name === 'g-watch');
      expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
      for (const e of events) {
        expect(e.object.apiVersion).toBe(`${GROUP}/v1alpha1`);
        expect(e.object.spec.color).toBeUndefined();
      }
      expect(events[1]!.object.spec.size).toBe(3);
    } finally {
      controller.abort();
    }
  });
});

describe('CRD version changes', () => {
  it('refuses duplicate version names, other than one storage version, and a Webhook conversion with several versions; accepts Webhook with one', async () => {
    const dup = gizmoCrd([version('v1', true, true, {}), version('v1', true, false, {})]);
    dup.metadata.name = 'dups.example.org';
    dup.spec.names = { kind: 'Dup', plural: 'dups' };
    const refused = await raw('POST', CRDS, dup);
    expect(refused.status).toBe(422);
    expect(refused.body.details.causes).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'spec.versions', message: expect.stringContaining('must contain unique version names') })]),
    );

    for (const storage of [
      [true, true],
      [false, false],
    ]) {
      const two = gizmoCrd([version('v1', true, storage[0]!, {}), version('v1beta1', true, storage[1]!, {})]);
      two.metadata.name = 'twos.example.org';
      two.spec.names = { kind: 'Two', plural: 'twos' };
      const answer = await raw('POST', CRDS, two);
      expect(answer.status).toBe(422);
      expect(answer.body.details.causes).toEqual([
        expect.objectContaining({ field: 'spec.versions', message: expect.stringContaining('must have exactly one version marked as storage version') }),
      ]);
    }

    const hook = gizmoCrd([version('v1', true, true, {}), version('v1beta1', true, false, {})]);
    hook.metadata.name = 'hooks.example.org';
    hook.spec.names = { kind: 'Hook', plural: 'hooks' };
    hook.spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://conv.example/convert' }, conversionReviewVersions: ['v1'] } };
    const webhook = await raw('POST', CRDS, hook);
    expect(webhook.status).toBe(422);
    expect(webhook.body.details.causes).toEqual([
      expect.objectContaining({ field: 'spec.conversion.strategy', message: expect.stringContaining('calls no conversion webhook') }),
    ]);
    expect((await raw('GET', `/apis/${GROUP}/v1/hooks`)).status).toBe(404);

    hook.spec.versions = [version('v1', true, true, {})];
    const noConfig = await raw('POST', CRDS, { ...hook, spec: { ...hook.spec, conversion: { strategy: 'Webhook' } } });
    expect(noConfig.status).toBe(422);
    expect(noConfig.body.details.causes).toEqual([
      expect.objectContaining({ field: 'spec.conversion.webhook', message: 'Required value: required when strategy is set to Webhook' }),
    ]);
    expect((await raw('POST', CRDS, hook)).status).toBe(201);
    expect((await raw('GET', `/apis/${GROUP}/v1/namespaces/${NS}/hooks`)).status).toBe(200);
  });

  it('stops serving a version removed from the CRD, ends its watches, and drops it from discovery and OpenAPI', async () => {
    let ended = false;
    const controller = await new Watch(sim.kubeConfig).watch(
      path('v1alpha1'),
      { resourceVersion: String(sim.store.currentRevision()) },
      () => undefined,
      () => (ended = true),
    );
    const crd = (await raw('GET', `${CRDS}/${CRD_NAME}`)).body;
    crd.spec.versions = crd.spec.versions.filter((v: { name: string }) => v.name !== 'v1alpha1');
    const updated = await raw('PUT', `${CRDS}/${CRD_NAME}`, crd);
    expect(updated.status).toBe(200);
    await until('the v1alpha1 watch to end', () => ended);
    controller.abort();
    expect((await raw('GET', path('v1alpha1', 'g1'))).status).toBe(404);
    expect((await raw('GET', `/apis/${GROUP}`)).body.versions.map((v: { version: string }) => v.version)).toEqual(['v1', 'v1beta1']);
    expect(Object.keys((await raw('GET', '/openapi/v3')).body.paths)).not.toContain(`apis/${GROUP}/v1alpha1`);
    // The objects are still there through the other versions.
    expect((await read('v1beta1', 'g1')).spec.size).toBe(3);
  });

  it('adds a version while serving: it appears in discovery and serves the stored objects', async () => {
    const crd = (await raw('GET', `${CRDS}/${CRD_NAME}`)).body;
    crd.spec.versions.push(
      version('v1beta2', true, false, { size: { type: 'integer' } }, { deprecated: true, deprecationWarning: 'gizmos v1beta2 goes away in 2027' }),
    );
    expect((await raw('PUT', `${CRDS}/${CRD_NAME}`, crd)).status).toBe(200);
    const group = (await raw('GET', `/apis/${GROUP}`)).body;
    expect(group.versions.map((v: { version: string }) => v.version)).toEqual(['v1', 'v1beta2', 'v1beta1']);
    const got = await raw('GET', path('v1beta2', 'g1'));
    expect(got.status).toBe(200);
    expect(got.body.apiVersion).toBe(`${GROUP}/v1beta2`);
    expect(got.body.spec).toEqual({ size: 3 });
    expect(got.warning).toBe('299 - "gizmos v1beta2 goes away in 2027"');
  });

  it('records a new storage version in status.storedVersions and keeps a stored version in spec until migrated away', async () => {
    let crd = (await raw('GET', `${CRDS}/${CRD_NAME}`)).body;
    expect(crd.status.storedVersions).toEqual(['v1']);
    for (const v of crd.spec.versions) v.storage = false;
    crd.spec.versions.push(version('v2', true, true, { size: { type: 'integer' }, color: { type: 'string' }, extra: { type: 'string' } }));
    const moved = await raw('PUT', `${CRDS}/${CRD_NAME}`, crd);
    expect(moved.status).toBe(200);
    expect(moved.body.status.storedVersions).toEqual(['v1', 'v2']);
    expect((await raw('GET', `/apis/${GROUP}`)).body.preferredVersion.version).toBe('v2');

    // New writes are stored in v2; objects written before stay in v1 until rewritten, and read the same.
    const fresh = await create('v1', 'g-v2', { size: 1 });
    expect(fresh.apiVersion).toBe(`${GROUP}/v1`);
    expect(stored('g-v2')!.apiVersion).toBe(`${GROUP}/v2`);
    expect((await read('v2', 'g1')).apiVersion).toBe(`${GROUP}/v2`);

    crd = moved.body;
    crd.spec.versions = crd.spec.versions.filter((v: { name: string }) => v.name !== 'v1');
    const refused = await raw('PUT', `${CRDS}/${CRD_NAME}`, crd);
    expect(refused.status).toBe(422);
    expect(refused.body.details.causes).toEqual([
      expect.objectContaining({
        field: 'status.storedVersions[0]',
        message: expect.stringContaining('missing from spec.versions; v1 was previously a storage version'),
      }),
    ]);
    expect((await raw('GET', path('v1', 'g1'))).status).toBe(200);

    // The storage migration's last step: drop v1 from status.storedVersions (the storage version must stay).
    const current = (await raw('GET', `${CRDS}/${CRD_NAME}`)).body;
    const withoutStorage = await raw('PUT', `${CRDS}/${CRD_NAME}/status`, { ...current, status: { ...current.status, storedVersions: ['v1'] } });
    expect(withoutStorage.status).toBe(422);
    expect(withoutStorage.body.details.causes[0].message).toContain('must have the storage version v2');
    const migrated = await raw('PUT', `${CRDS}/${CRD_NAME}/status`, { ...current, status: { ...current.status, storedVersions: ['v2'] } });
    expect(migrated.status).toBe(200);
    expect(migrated.body.status.storedVersions).toEqual(['v2']);
    const removed = await raw('PUT', `${CRDS}/${CRD_NAME}`, { ...crd, metadata: migrated.body.metadata });
    expect(removed.status).toBe(200);
    expect((await raw('GET', path('v1', 'g1'))).status).toBe(404);
    expect((await read('v2', 'g1')).spec.size).toBe(3);
  });
});
