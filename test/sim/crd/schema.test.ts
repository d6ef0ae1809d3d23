import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../../src/sim/index.js';
import { expectStatus } from '../apiHelpers.js';
import { CRDS, rawRequest, startWithCrds } from './crdFixture.js';

let sim: Simulator;
let custom: CustomObjectsApi;

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

const GROUP = 'example.com';
const VERSION = 'v1';
const NS = 'default';

/** A CRD exercising every schema keyword the simulator applies. */
// Plain wire JSON: client-node's typed CRD model spells `enum`/`default`/x-kubernetes-* differently, so CRDs go over
// HTTP as JSON here.
function widgetCrd(): any {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: GROUP,
      names: { kind: 'Widget', plural: 'widgets', shortNames: ['wg'] },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  required: ['size'],
                  properties: {
                    size: { type: 'integer', minimum: 1, maximum: 10 },
                    ratio: { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true },
                    color: { type: 'string', enum: ['red', 'green'] },
                    code: { type: 'string', pattern: '^[a-z]+$' },
                    // Go (RE2) syntax: the flag group applies case-insensitively.
                    word: { type: 'string', pattern: '(?i)^[a-z]+$' },
                    ip: { type: 'string', format: 'ipv4' },
                    label: { type: 'string', minLength: 2, maxLength: 5 },
                    tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2 },
                    note: { type: 'string', nullable: true },
                    plain: { type: 'string' },
                    weights: { type: 'object', additionalProperties: { type: 'integer' } },
                    mode: { type: 'string', default: 'auto' },
                    nested: { type: 'object', default: {}, properties: { level: { type: 'integer', default: 3 } } },
                    port: { 'x-kubernetes-int-or-string': true },
                    template: {
                      type: 'object',
                      'x-kubernetes-embedded-resource': true,
                      properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } },
                    },
                    free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                    limit: { type: 'integer', 'x-kubernetes-validations': [{ rule: 'self <= 100', message: 'limit too high' }] },
                    locked: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'locked is immutable' }] },
                    exotic: { type: 'array', items: { type: 'string' }, 'x-kubernetes-validations': [{ rule: 'self.all(x, x != "b")' }] },
                  },
                },
                status: {
                  type: 'object',
                  properties: {
                    phase: { type: 'string', enum: ['Pending', 'Ready'] },
                    replicas: { type: 'integer', 'x-kubernetes-validations': [{ rule: 'self >= 0', message: 'replicas must not be negative' }] },
                    conditions: {
                      type: 'array',
                      items: { type: 'object', required: ['type'], properties: { type: { type: 'string' }, status: { type: 'string' } } },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

/** A CRD without a status subresource: status is part of the object, like the upstream VirtualCluster. */
function gadgetCrd(): any {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.example.com' },
    spec: {
      group: GROUP,
      names: { kind: 'Gadget', plural: 'gadgets' },
      scope: 'Cluster',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', properties: { on: { type: 'boolean' } } },
                status: { type: 'object', properties: { phase: { type: 'string' } } },
              },
            },
          },
        },
      ],
    },
  };
}

const widget = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'Widget',
  metadata: { name, namespace: NS },
  spec,
});
const create = (name: string, spec: Record<string, unknown>) =>
  custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, body: widget(name, spec) }) as Promise<any>;
const read = (name: string) => custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, name }) as Promise<any>;

const raw = (method: string, path: string, body?: unknown, contentType?: string) => rawRequest(sim, method, path, body, contentType);

beforeAll(async () => {
  ({ sim, custom } = await startWithCrds(widgetCrd(), gadgetCrd()));
});

afterAll(async () => {
  await sim?.stop();
});

describe('validation of each schema keyword: the bad value refused with the real field error, the good one stored', () => {
  const cases: { keyword: string; field: string; bad: unknown; good: unknown; reason: string; message: string }[] = [
    {
      keyword: 'type',
      field: 'size',
      bad: 'big',
      good: 5,
      reason: 'FieldValueTypeInvalid',
      message: 'Invalid value: "string": spec.size in body must be of type integer: "string"',
    },
    {
      keyword: 'maximum',
      field: 'size',
      bad: 11,
      good: 10,
      reason: 'FieldValueInvalid',
      message: 'Invalid value: 11: spec.size in body should be less than or equal to 10',
    },
    {
      keyword: 'minimum',
      field: 'size',
      bad: 0,
      good: 1,
      reason: 'FieldValueInvalid',
      message: 'Invalid value: 0: spec.size in body should be greater than or equal to 1',
    },
    {
      keyword: 'exclusiveMinimum',
      field: 'ratio',
      bad: 0,
      good: 0.5,
      reason: 'FieldValueInvalid',
      message: 'Invalid value: 0: spec.ratio in body should be greater than 0',
    },
    {
      keyword: 'exclusiveMaximum',
      field: 'ratio',
      bad: 1,
      good: 0.99,
      reason: 'FieldValueInvalid',
      message: 'Invalid value: 1: spec.ratio in body should be less than 1',
    },
    {
      keyword: 'enum',
      field: 'color',
      bad: 'blue',
      good: 'red',
      reason: 'FieldValueNotSupported',
      message: 'Unsupported value: "blue": supported values: "red", "green"',
    },
    {
      keyword: 'pattern',
      field: 'code',
      bad: 'ABC',
      good: 'abc',
      reason: 'FieldValueInvalid',
      message: `Invalid value: "ABC": spec.code in body should match '^[a-z]+$'`,
    },
    {
      keyword: 'pattern (Go flags)',
      field: 'word',
      bad: 'a1',
      good: 'ABC',
      reason: 'FieldValueInvalid',
      message: `Invalid value: "a1": spec.word in body should match '(?i)^[a-z]+$'`,
    },
    {
      keyword: 'format',
      field: 'ip',
      bad: '10.0.0.300',
      good: '10.0.0.30',
      reason: 'FieldValueInvalid',
      message: 'Invalid value: "10.0.0.300": spec.ip in body must be of type ipv4: "10.0.0.300"',
    },
    {
      keyword: 'minLength',
      field: 'label',
      bad: 'a',
      good: 'ab',
      reason: 'FieldValueInvalid',
      message: 'Invalid value: "a": spec.label in body should be at least 2 chars long',
    },
    { keyword: 'maxLength', field: 'label', bad: 'abcdef', good: 'abcde', reason: 'FieldValueTooLong', message: 'Too long: may not be longer than 5' },
    {
      keyword: 'minItems',
      field: 'tags',
      bad: [],
      good: ['a'],
      reason: 'FieldValueInvalid',
      message: 'Invalid value: []: spec.tags in body should have at least 1 items',
    },
    {
      keyword: 'maxItems',
      field: 'tags',
      bad: ['a', 'b', 'c'],
      good: ['a', 'b'],
      reason: 'FieldValueTooMany',
      message: 'Too many: 3: must have at most 2 items',
    },
    {
      keyword: 'additionalProperties',
      field: 'weights',
      bad: { a: 'heavy' },
      good: { a: 2 },
      reason: 'FieldValueTypeInvalid',
      message: 'Invalid value: "string": spec.weights.a in body must be of type integer: "string"',
    },
    {
      keyword: 'x-kubernetes-int-or-string',
      field: 'port',
      bad: true,
      good: 'http',
      reason: 'FieldValueTypeInvalid',
      message: 'spec.port in body must be of type integer,string: "boolean"',
    },
    {
      keyword: 'x-kubernetes-validations',
      field: 'limit',
      bad: 101,
      good: 100,
      reason: 'FieldValueInvalid',
      message: 'Invalid value: "integer": limit too high',
    },
  ];

  it.each(cases)('$keyword', async (c) => {
    const name = `kw-${c.keyword
      .toLowerCase()
      .replace(/[^a-z]+/g, '-')
      .replace(/-$/, '')}`;
    const status = await expectStatus(create(name, { size: 5, [c.field]: c.bad }), 422, 'Invalid');
    const field = c.keyword === 'additionalProperties' ? 'spec.weights.a' : `spec.${c.field}`;
    expect(status.details).toMatchObject({ name, group: GROUP, kind: 'Widget' });
    expect(status.details.causes).toEqual([{ reason: c.reason, field, message: expect.stringContaining(c.message) }]);
    expect(status.message).toBe(`Widget.example.com "${name}" is invalid: ${field}: ${status.details.causes[0].message}`);
    expect((await create(name, { size: 5, [c.field]: c.good })).spec[c.field]).toEqual(c.good);
  });

  it('required: names the missing field', async () => {
    const status = await expectStatus(create('req', { color: 'red' }), 422, 'Invalid');
    expect(status.details.causes).toEqual([{ reason: 'FieldValueRequired', field: 'spec.size', message: 'Required value' }]);
  });

  it('nullable: null is kept where nullable, dropped where not, and refused inside a list', async () => {
    const created = await create('nulls', { size: 1, note: null, plain: null });
    expect(created.spec).toHaveProperty('note', null);
    expect(created.spec).not.toHaveProperty('plain');
    const status = await expectStatus(create('nulls-list', { size: 1, tags: [null] }), 422, 'Invalid');
    expect(status.details.causes[0]).toMatchObject({ reason: 'FieldValueTypeInvalid', field: 'spec.tags[0]' });
  });

  it('reports every failing field at once, in brackets as kube-apiserver aggregates them', async () => {
    const status = await expectStatus(create('many', { size: 50, color: 'blue' }), 422, 'Invalid');
    expect(status.details.causes.map((c: any) => c.field).sort()).toEqual(['spec.color', 'spec.size']);
    expect(status.message).toMatch(/^Widget\.example\.com "many" is invalid: \[spec\.\w+: .*, spec\.\w+: .*\]$/);
  });

  it('validates merge patches, JSON patches and server-side apply, and changes nothing on failure', async () => {
    await create('patched', { size: 2 });
    const args = { group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, name: 'patched' };
    await expectStatus(custom.patchNamespacedCustomObject({ ...args, body: { spec: { size: 20 } } }, merge), 422, 'Invalid');
    await expectStatus(custom.patchNamespacedCustomObject({ ...args, body: [{ op: 'replace', path: '/spec/size', value: 'x' }] }, jsonPatch), 422, 'Invalid');
    await expectStatus(
      custom.patchNamespacedCustomObject({ ...args, fieldManager: 'test', force: true, body: widget('patched', { size: 0 }) }, apply),
      422,
      'Invalid',
    );
    expect((await read('patched')).spec.size).toBe(2);
    expect((await custom.patchNamespacedCustomObject({ ...args, body: [{ op: 'replace', path: '/spec/size', value: 3 }] }, jsonPatch)) as any).toMatchObject({
      spec: { size: 3 },
    });
  });

  it('evaluates transition rules on update only: self == oldSelf makes a field immutable', async () => {
    await create('locked', { size: 1, locked: 'v1' });
    const status = await expectStatus(
      custom.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, name: 'locked', body: { spec: { locked: 'v2' } } },
        merge,
      ),
      422,
      'Invalid',
    );
    expect(status.details.causes).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.locked', message: 'Invalid value: "string": locked is immutable' }]);
  });

  it('skips rules outside the supported CEL subset instead of guessing', async () => {
    expect((await create('exotic', { size: 1, exotic: ['b'] })).spec.exotic).toEqual(['b']);
  });
});

describe('pruning', () => {
  it('drops undeclared fields in spec and nested objects, and keeps what preserve-unknown-fields and maps allow', async () => {
    const created = await create('prune', { size: 1, extra: 1, nested: { level: 1, deep: true }, free: { any: { thing: [1] } }, weights: { x: 1 } });
    expect(created.spec).toEqual({ size: 1, nested: { level: 1 }, free: { any: { thing: [1] } }, weights: { x: 1 }, mode: 'auto' });
    expect((await read('prune')).spec).not.toHaveProperty('extra');
  });

  it('keeps apiVersion, kind and the ObjectMeta fields of an embedded resource, and requires its apiVersion and kind', async () => {
    const template = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' }, bogus: 1 }, spec: { a: 'x', b: 'y' }, other: 1 };
    const created = await create('embedded', { size: 1, template });
    expect(created.spec.template).toEqual({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' } }, spec: { a: 'x' } });
    const status = await expectStatus(create('embedded-bad', { size: 1, template: { spec: {} } }), 422, 'Invalid');
    expect(status.details.causes.map((c: any) => c.field).sort()).toEqual(['spec.template.apiVersion', 'spec.template.kind']);
  });

  it('prunes inside status on the status subresource', async () => {
    await create('status-prune', { size: 1 });
    const patched = (await custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: 'widgets',
        namespace: NS,
        name: 'status-prune',
        body: { status: { phase: 'Ready', agentDeploymentRef: { name: 'x' }, conditions: [{ type: 'A', status: 'True', bogus: 1 }] } },
      },
      merge,
    )) as any;
    expect(patched.status).toEqual({ phase: 'Ready', conditions: [{ type: 'A', status: 'True' }] });
    await expectStatus(
      custom.patchNamespacedCustomObjectStatus(
        { group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, name: 'status-prune', body: { status: { phase: 'Gone' } } },
        merge,
      ),
      422,
      'Invalid',
    );
  });

  it('with fieldValidation=Strict refuses unknown fields (400), with Warn prunes them and says so in a Warning header', async () => {
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${NS}/widgets`;
    const strict = await raw('POST', `${path}?fieldValidation=Strict`, widget('strict', { size: 1, extra: 1, nested: { deep: 1 } }));
    expect(strict.status).toBe(400);
    expect(strict.body).toMatchObject({
      reason: 'BadRequest',
      message: 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.extra", unknown field "spec.nested.deep"',
    });
    const warn = await raw('POST', `${path}?fieldValidation=Warn`, widget('warn', { size: 1, extra: 1 }));
    expect(warn.status).toBe(201);
    expect(warn.warning).toBe('299 - "unknown field \\"spec.extra\\""');
    expect(warn.body.spec).not.toHaveProperty('extra');
    const ssa = await raw(
      'PATCH',
      `${path}/warn?fieldManager=t&force=true&fieldValidation=Strict`,
      widget('warn', { size: 2, extra: 1 }),
      'application/apply-patch+yaml',
    );
    expect(ssa.status).toBe(400);
    expect(ssa.body.message).toContain('.spec.extra: field not declared in schema');
    expect((await read('warn')).spec.size).toBe(1);
  });
});

describe('server-side apply of pruned fields', () => {
  it('records no managed field for what the schema pruned', async () => {
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${NS}/widgets/ssa-pruned?fieldManager=ops`;
    const applied = await raw('PATCH', path, widget('ssa-pruned', { size: 1, extra: { deep: 1 } }), 'application/apply-patch+yaml');
    expect(applied.status).toBe(201);
    expect(applied.body.spec).not.toHaveProperty('extra');
    const ops = applied.body.metadata.managedFields.find((m: any) => m.manager === 'ops');
    expect(ops.fieldsV1['f:spec']).toHaveProperty('f:size');
    expect(ops.fieldsV1['f:spec']).not.toHaveProperty('f:extra');
  });
});

describe('defaulting', () => {
  it('fills missing fields and nulls, nested defaults included, and leaves given values alone', async () => {
    expect((await create('defaults', { size: 1 })).spec).toEqual({ size: 1, mode: 'auto', nested: { level: 3 } });
    expect((await create('defaults-null', { size: 1, mode: null, nested: { level: 7 } })).spec).toEqual({ size: 1, mode: 'auto', nested: { level: 7 } });
  });

  it('applies a default added later to objects already stored, as a read from storage does', async () => {
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'gadgets',
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Gadget', metadata: { name: 'old' }, spec: {} },
    });
    const crd = (await raw('GET', `${CRDS}/gadgets.example.com`)).body;
    crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.on.default = true;
    expect((await raw('PUT', `${CRDS}/gadgets.example.com`, crd)).status).toBe(200);
    const old = (await custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: 'gadgets', name: 'old' })) as any;
    expect(old.spec).toEqual({ on: true });
  });
});

describe('the status subresource', () => {
  it('when declared: create drops status, the main resource ignores status, /status ignores spec', async () => {
    const created = (await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'widgets',
      namespace: NS,
      body: { ...widget('sub', { size: 1 }), status: { phase: 'Ready' } },
    })) as any;
    expect(created.status).toBeUndefined();
    const args = { group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, name: 'sub' };
    await custom.patchNamespacedCustomObjectStatus({ ...args, body: { status: { phase: 'Pending' }, spec: { size: 9 } } }, merge);
    await custom.patchNamespacedCustomObject({ ...args, body: { status: { phase: 'Ready' }, spec: { size: 2 } } }, merge);
    expect(await read('sub')).toMatchObject({ spec: { size: 2 }, status: { phase: 'Pending' } });
  });

  it('checks the half each endpoint writes: schema and rules of status through /status, of the rest through the main resource', async () => {
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, body: widget('halves', { size: 1 }) });
    const args = { group: GROUP, version: VERSION, plural: 'widgets', namespace: NS, name: 'halves' };
    const badStatus = await expectStatus(
      custom.patchNamespacedCustomObjectStatus({ ...args, body: { status: { phase: 'Lost', conditions: [{ status: 'True' }] } } }, merge),
      422,
      'Invalid',
    );
    expect(badStatus.details.causes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reason: 'FieldValueNotSupported', field: 'status.phase' }),
        expect.objectContaining({ reason: 'FieldValueRequired', field: 'status.conditions[0].type' }),
      ]),
    );
    const badRule = await expectStatus(custom.patchNamespacedCustomObjectStatus({ ...args, body: { status: { replicas: -1 } } }, merge), 422, 'Invalid');
    expect(badRule.details.causes).toEqual([
      { reason: 'FieldValueInvalid', field: 'status.replicas', message: 'Invalid value: "integer": replicas must not be negative' },
    ]);
    const badSpec = await expectStatus(custom.patchNamespacedCustomObject({ ...args, body: { spec: { size: 11 } } }, merge), 422, 'Invalid');
    expect(badSpec.details.causes.map((c: any) => c.field)).toEqual(['spec.size']);
    const badSpecRule = await expectStatus(custom.patchNamespacedCustomObject({ ...args, body: { spec: { limit: 101 } } }, merge), 422, 'Invalid');
    expect(badSpecRule.details.causes.map((c: any) => c.field)).toEqual(['spec.limit']);
    expect(await read('halves')).toMatchObject({ spec: { size: 1 } });
    expect((await read('halves')).status).toBeUndefined();
  });

  it('when absent: status is written with the object and /status is not found', async () => {
    const body = { apiVersion: `${GROUP}/${VERSION}`, kind: 'Gadget', metadata: { name: 'g' }, spec: { on: false }, status: { phase: 'Up', junk: 1 } };
    const created = (await custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: 'gadgets', body })) as any;
    expect(created.status).toEqual({ phase: 'Up' });
    await expectStatus(
      custom.patchClusterCustomObjectStatus({ group: GROUP, version: VERSION, plural: 'gadgets', name: 'g', body: { status: { phase: 'Down' } } }, merge),
      404,
      'NotFound',
    );
  });
});

describe('validation ratcheting', () => {
  it('does not fail a value an update leaves unchanged against a rule added later, but checks a changed one and every transition rule', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'ratchets.example.com' },
      spec: {
        group: GROUP,
        names: { kind: 'Ratchet', plural: 'ratchets' },
        scope: 'Namespaced',
        versions: [
          {
            name: VERSION,
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    properties: {
                      count: { type: 'integer' },
                      note: { type: 'string' },
                      level: { type: 'integer', 'x-kubernetes-validations': [{ rule: 'self >= oldSelf', message: 'level may not go down' }] },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    };
    expect((await raw('POST', CRDS, crd)).status).toBe(201);
    const args = { group: GROUP, version: VERSION, plural: 'ratchets', namespace: NS };
    await custom.createNamespacedCustomObject({
      ...args,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Ratchet', metadata: { name: 'r' }, spec: { count: 150, level: 3 } },
    });
    const stored = (await raw('GET', `${CRDS}/ratchets.example.com`)).body;
    stored.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.count['x-kubernetes-validations'] = [
      { rule: 'self <= 100', message: 'count too high' },
    ];
    expect((await raw('PUT', `${CRDS}/ratchets.example.com`, stored)).status).toBe(200);

    // count stays 150: its new rule is not failed again.
    await custom.patchNamespacedCustomObject({ ...args, name: 'r', body: { spec: { note: 'kept' } } }, merge);
    const changed = await expectStatus(custom.patchNamespacedCustomObject({ ...args, name: 'r', body: { spec: { count: 160 } } }, merge), 422, 'Invalid');
    expect(changed.details.causes).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.count', message: 'Invalid value: "integer": count too high' }]);
    const down = await expectStatus(custom.patchNamespacedCustomObject({ ...args, name: 'r', body: { spec: { level: 2 } } }, merge), 422, 'Invalid');
    expect(down.details.causes.map((c: any) => c.field)).toEqual(['spec.level']);
    await custom.patchNamespacedCustomObject({ ...args, name: 'r', body: { spec: { count: 50, level: 4 } } }, merge);
    const r = (await custom.getNamespacedCustomObject({ ...args, name: 'r' })) as any;
    expect(r.spec).toEqual({ count: 50, note: 'kept', level: 4 });
  });
});

describe('CustomResourceDefinitions', () => {
  it('refuses an invalid CRD with 422 and field causes', async () => {
    const bad = widgetCrd();
    bad.metadata.name = 'things.example.com';
    bad.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size = { minimum: 1 };
    const { status: code, body: status } = await raw('POST', CRDS, bad);
    expect(code).toBe(422);
    expect(status.reason).toBe('Invalid');
    expect(status.details.causes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reason: 'FieldValueInvalid', field: 'metadata.name' }),
        expect.objectContaining({ reason: 'FieldValueRequired', field: 'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type' }),
      ]),
    );
  });

  it('defaults names and reports the CRD established with its accepted names and stored versions', async () => {
    const crd = (await raw('GET', `${CRDS}/widgets.example.com`)).body;
    expect(crd.spec.names).toMatchObject({ singular: 'widget', listKind: 'WidgetList' });
    expect(crd.status.conditions.find((c: any) => c.type === 'Established')?.status).toBe('True');
    expect(crd.status.storedVersions).toEqual(['v1']);
  });

  it('drives discovery and OpenAPI: a new group appears on create and goes with its last CRD', async () => {
    const body = { ...gadgetCrd(), metadata: { name: 'sprockets.tools.example.org' } };
    body.spec = { ...body.spec, group: 'tools.example.org', names: { kind: 'Sprocket', plural: 'sprockets', singular: 'sprocket', categories: ['all'] } };
    expect((await raw('POST', CRDS, body)).status).toBe(201);
    const groups = (await raw('GET', '/apis')).body.groups.map((g: any) => g.name);
    expect(groups).toContain('tools.example.org');
    const resources = (await raw('GET', '/apis/tools.example.org/v1')).body.resources;
    expect(resources).toEqual([
      expect.objectContaining({ name: 'sprockets', singularName: 'sprocket', namespaced: false, kind: 'Sprocket', categories: ['all'] }),
    ]);
    expect(Object.keys((await raw('GET', '/openapi/v3')).body.paths)).toContain('apis/tools.example.org/v1');
    const doc = (await raw('GET', '/openapi/v3/apis/tools.example.org/v1')).body;
    expect(doc.components.schemas['org.example.tools.v1.Sprocket'].properties.spec.properties.on).toEqual({ type: 'boolean' });

    await custom.createClusterCustomObject({
      group: 'tools.example.org',
      version: VERSION,
      plural: 'sprockets',
      body: { apiVersion: `tools.example.org/${VERSION}`, kind: 'Sprocket', metadata: { name: 's' } },
    });
    expect((await raw('DELETE', `${CRDS}/sprockets.tools.example.org`)).status).toBe(200);
    expect((await raw('GET', '/apis')).body.groups.map((g: any) => g.name)).not.toContain('tools.example.org');
    expect((await raw('GET', '/apis/tools.example.org/v1')).status).toBe(404);
    expect(Object.keys((await raw('GET', '/openapi/v3')).body.paths)).not.toContain('apis/tools.example.org/v1');
    expect((await raw('GET', '/apis/tools.example.org/v1/sprockets/s')).status).toBe(404);
  });

  it('ends a watch on the type when its CRD is deleted, after the DELETED events of its objects', async () => {
    const crd = { ...gadgetCrd(), metadata: { name: 'cogs.example.net' } };
    crd.spec = { ...crd.spec, group: 'example.net', names: { kind: 'Cog', plural: 'cogs' } };
    expect((await raw('POST', CRDS, crd)).status).toBe(201);
    await custom.createClusterCustomObject({
      group: 'example.net',
      version: VERSION,
      plural: 'cogs',
      body: { apiVersion: `example.net/${VERSION}`, kind: 'Cog', metadata: { name: 'c1' } },
    });
    const watch = await fetch(`${sim.url}/apis/example.net/v1/cogs?watch=1`);
    const reader = watch.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(JSON.parse(first.trim())).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'c1' } } });
    expect((await raw('DELETE', `${CRDS}/cogs.example.net`)).status).toBe(200);
    let rest = '';
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(
      rest
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([expect.objectContaining({ type: 'DELETED', object: expect.objectContaining({ metadata: expect.objectContaining({ name: 'c1' }) }) })]);
  });

  it('serves only the types whose CRD is installed: the project CRDs by default, none with crds: false', async () => {
    const bare = await startSimulator({ behaviour: false, crds: false });
    try {
      expect(bare.store.registry.byGroupPlural('network.harvesterhci.io', 'ippools')).toBeUndefined();
      expect((await fetch(`${bare.url}/apis/network.harvesterhci.io/v1alpha1/namespaces/default/ippools`)).status).toBe(404);
    } finally {
      await bare.stop();
    }
    for (const [group, plural] of [
      ['network.harvesterhci.io', 'ippools'],
      ['tenancy.x-k8s.io', 'virtualclusters'],
      ['tenancy.x-k8s.io', 'clusterversions'],
      ['k8s.cni.cncf.io', 'network-attachment-definitions'],
    ]) {
      expect(sim.store.registry.byGroupPlural(group!, plural!)?.custom).toBe(true);
    }
  });
});
